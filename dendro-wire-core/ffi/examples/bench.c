/*
 * bench FILE ROUNDS MILLIS: the decoder's rate through the C API, from C.
 * FILE holds frames (no preamble), as the Rust decoder's benchmark decodes
 * them. Each round decodes the whole body over and over for MILLIS ms, in
 * three ways: frames only (the row count read); every row stepped with
 * dw_rows_next and read (timestamp, stream and row lengths), the same
 * checksum the Rust benchmark folds; and the same rows taken in batches
 * with dw_rows_next_batch. It prints the best seconds per pass of each,
 * one line each: "decode S", "visit S" and "batch S".
 *
 * cargo xtask bench-report runs it beside the Rust decoder on the same
 * bytes; cargo xtask c builds it with every warning an error.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dendro_wire.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Rows a batch call fills: a Rows frame of the agent holds 64. */
#define BATCH 256

/* How a pass reads each frame. */
enum { COUNT, VISIT, BATCHED };

/* One pass over the body: a checksum, or UINT64_MAX if a frame failed. */
static uint64_t pass(const uint8_t *body, size_t len, int how) {
  uint64_t sum = 0;
  size_t at = 0;
  while (at < len) {
    dw_frame frame;
    size_t used, needed;
    if (dw_decode(body + at, len - at, &frame, &used, &needed, NULL) != DW_RESULT_OK) {
      return UINT64_MAX;
    }
    at += used;
    if (frame.kind != DW_FRAME_ROWS) {
      sum += 1;
    } else if (how == COUNT) {
      sum += frame.body.rows.count;
    } else if (how == VISIT) {
      dw_row_cursor cursor = frame.body.rows.rows;
      dw_row row;
      while (dw_rows_next(&cursor, &row, NULL) == DW_RESULT_OK) {
        sum += (uint64_t)row.ts ^ (uint64_t)row.row.len ^ (uint64_t)row.stream.len;
      }
    } else {
      dw_row_cursor cursor = frame.body.rows.rows;
      static dw_row rows[BATCH];
      size_t n;
      while (dw_rows_next_batch(&cursor, rows, BATCH, &n, NULL) == DW_RESULT_OK) {
        for (size_t i = 0; i < n; i++) {
          sum += (uint64_t)rows[i].ts ^ (uint64_t)rows[i].row.len ^ (uint64_t)rows[i].stream.len;
        }
      }
    }
  }
  return sum;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: bench FILE ROUNDS MILLIS\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *body = malloc(size > 0 ? (size_t)size : 1);
  if (!body || fread(body, 1, (size_t)size, f) != (size_t)size) {
    fprintf(stderr, "bench: cannot read %s\n", argv[1]);
    return 1;
  }
  fclose(f);
  int rounds = atoi(argv[2]);
  double per_sample = atof(argv[3]) / 1e3;
  volatile uint64_t sink = 0;
  static const char *const names[] = {"decode", "visit", "batch"};
  for (int how = COUNT; how <= BATCHED; how++) {
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
      double start = now(), elapsed;
      long n = 0;
      do {
        uint64_t sum = pass(body, (size_t)size, how);
        if (sum == UINT64_MAX) {
          fprintf(stderr, "bench: a frame of %s did not decode\n", argv[1]);
          return 1;
        }
        sink += sum;
        n++;
        elapsed = now() - start;
      } while (elapsed < per_sample);
      if (elapsed / (double)n < best) best = elapsed / (double)n;
    }
    printf("%s %.9f\n", names[how], best);
  }
  free(body);
  (void)sink;
  return 0;
}
