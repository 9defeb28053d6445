/*
 * sizing: the header's compile-time sizing held to dw_source_sizing.
 * Over a sweep of declarations (no streams to five, names short and past
 * the row path's short way, an index or none, a uuid or none, labels and
 * metadata of several sizes) and of budgets (every field from 0 up, rows
 * short and past the short way), DW_SOURCE_STORAGE and
 * DW_SOURCE_FRAME_BUFFER say what the function says, byte for byte; and
 * a static array sized by them compiles. It prints the number of shapes
 * compared and exits 0, or says the first that differs.
 *
 * cargo xtask c builds it with -Wall -Wextra -Werror and both sanitizers
 * and runs it.
 */
#include <dendro_wire.h>

#include <stdio.h>
#include <string.h>

/* Sized at compile time: two streams of 7-byte names, an index named
 * "adc/channels", no uuid, one label and no metadata. */
static uint8_t example_storage[DW_SOURCE_STORAGE(
    DW_HANDSHAKE_BYTES(0, DW_MAP_BYTES(1, 14), DW_MAP_BYTES(0, 0)), 2, 14, 7, 7, DW_INDEX(12), 8,
    3, 4, 9, 1)];

static const char *const names[] = {
    "a", "cpu/usage", "twelve-bytes", "a-stream-name-of-exactly-32-byte",
    "a-stream-name-longer-than-the-short-way-of-the-row-path",
};
#define NAMES (sizeof names / sizeof names[0])

static const char *const index_names[] = {"", "slots", "adc/channels"};

static const dw_pair labels[] = {
    {{"device", 6}, {"sensor-7", 8}},
    {{"rack", 4}, {"r-17", 4}},
    {{"zone", 4}, {"eu-west-with-a-longer-value", 27}},
};

static const size_t rows_sizes[] = {0, 1, 7, 8, 31, 32, 33, 64, 200};
static const size_t counts[] = {0, 1, 3, 12};
static const size_t slot_sizes[] = {0, 9, 30};

int main(void) {
  size_t shapes = 0;
  if (sizeof example_storage == 0) return 1;
  dw_str streams[NAMES];
  /* Every subset of the names, in order: 0 to 5 streams. */
  for (unsigned mask = 0; mask < (1u << NAMES); mask++) {
    size_t n = 0, text = 0, longest = 0, shortest = (size_t)-1;
    for (size_t i = 0; i < NAMES; i++) {
      if (!(mask & (1u << i))) continue;
      size_t len = strlen(names[i]);
      streams[n].ptr = names[i];
      streams[n].len = len;
      n++;
      text += len;
      if (len > longest) longest = len;
      if (len < shortest) shortest = len;
    }
    for (size_t ix = 0; ix < 4; ix++) {
      /* ix 0: no index; else index_names[ix - 1]. */
      size_t index = ix == 0 ? DW_NO_INDEX : DW_INDEX(strlen(index_names[ix - 1]));
      /* A uuid or none, 0 to 3 labels, metadata or none. */
      for (unsigned shape = 0; shape < 16; shape++) {
        int uuid = shape & 1;
        size_t n_labels = (shape >> 1) & 3;
        size_t label_text = 0;
        for (size_t l = 0; l < n_labels; l++) label_text += labels[l].key.len + labels[l].value.len;
        size_t n_metadata = (shape >> 3) & 1;
        size_t metadata_text = n_metadata ? labels[0].key.len + labels[0].value.len : 0;
        dw_source_decl decl;
        memset(&decl, 0, sizeof decl);
        decl.uuid = uuid ? (dw_str)DW_STR("6f1c2e3d-4b5a-4697-8877-665544332211") : DW_NO_STR;
        decl.labels = labels;
        decl.labels_len = n_labels;
        decl.metadata = labels;
        decl.metadata_len = n_metadata;
        decl.streams = streams;
        decl.streams_len = n;
        decl.index_stream = ix == 0 ? DW_NO_STR
                                    : (dw_str){index_names[ix - 1], strlen(index_names[ix - 1])};
        size_t handshake =
            DW_HANDSHAKE_BYTES(uuid, DW_MAP_BYTES(n_labels, label_text),
                               DW_MAP_BYTES(n_metadata, metadata_text));
        for (size_t r = 0; r < sizeof rows_sizes / sizeof rows_sizes[0]; r++) {
          for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            for (size_t sl = 0; sl < sizeof counts / sizeof counts[0]; sl++) {
              for (size_t ss = 0; ss < sizeof slot_sizes / sizeof slot_sizes[0]; ss++) {
                for (size_t ch = 0; ch < sizeof counts / sizeof counts[0]; ch++) {
                  dw_budget b = {rows_sizes[r], counts[c], counts[sl], slot_sizes[ss], counts[ch]};
                  dw_sizing said;
                  dw_error error;
                  if (dw_source_sizing(&decl, &b, &said, &error) != DW_RESULT_OK) {
                    fprintf(stderr, "sizing: dw_source_sizing refused shape %zu\n", shapes);
                    return 1;
                  }
                  size_t storage =
                      DW_SOURCE_STORAGE(handshake, n, text, longest, shortest, index, b.largest_row,
                                        b.rows_per_interval, b.slots, b.largest_slot,
                                        b.slot_changes_per_interval);
                  size_t frame_buffer = DW_SOURCE_FRAME_BUFFER(
                      handshake, n, text, longest, shortest, index, b.largest_row,
                      b.rows_per_interval, b.slots, b.largest_slot, b.slot_changes_per_interval);
                  if (storage != said.storage || frame_buffer != said.frame_buffer) {
                    fprintf(stderr,
                            "sizing: streams mask %u, index %zu, shape %u, budget {%zu, %zu, "
                            "%zu, %zu, %zu}: the macros say %zu and %zu, dw_source_sizing %zu "
                            "and %zu\n",
                            mask, ix, shape, b.largest_row, b.rows_per_interval, b.slots,
                            b.largest_slot, b.slot_changes_per_interval, storage, frame_buffer,
                            said.storage, said.frame_buffer);
                    return 1;
                  }
                  shapes++;
                }
              }
            }
          }
        }
      }
    }
  }
  printf("sizing: %zu shapes, the macros dw_source_sizing's on each\n", shapes);
  return 0;
}
