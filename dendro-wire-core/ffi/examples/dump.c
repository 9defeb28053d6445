/*
 * dump FILE: print a dendro replication stream as JSON Lines, one object
 * per frame, exactly as `dendro-wire dump --json FILE` does (FILE `-` is
 * standard input). On a bad stream the frames before the error are
 * printed, then the error on standard error in the tool's words, and the
 * exit status is 1.
 *
 * It reads as the tool's reader does: into one buffer that grows only when
 * a frame does not fit, decoding each frame in place (sans-IO: the library
 * never reads, it says how many more bytes it needs), nothing copied.
 *
 * cargo xtask c builds it with -fsanitize=address,undefined and compares
 * it with the tool over every stream under testdata/ and a generated and
 * damaged set.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dendro_wire.h"

/* The stream as read so far: bytes [start, end) of buf are in hand and not
 * yet consumed; buf[start] is at `offset` in the stream. */
struct input {
  FILE *file;
  uint8_t *buf;
  size_t cap, start, end;
  uint64_t offset;
};

/* Read at least one more byte for something that needs `needed` more;
 * 0 at the end of the stream, -1 if reading failed or memory ran out. */
static int fill(struct input *in, size_t needed) {
  size_t have = in->end - in->start;
  if (in->start > 0 && in->cap - in->start < have + needed) {
    memmove(in->buf, in->buf + in->start, have);
    in->start = 0;
    in->end = have;
  }
  if (in->cap - in->end < needed) {
    size_t cap = in->cap;
    while (cap - in->end < needed) cap *= 2;
    uint8_t *grown = realloc(in->buf, cap);
    if (!grown) return -1;
    in->buf = grown;
    in->cap = cap;
  }
  size_t n = fread(in->buf + in->end, 1, in->cap - in->end, in->file);
  in->end += n;
  if (n == 0) return ferror(in->file) ? -1 : 0;
  return 1;
}

static void put_json_str(const char *s, size_t len) {
  static const char hex[] = "0123456789abcdef";
  putchar('"');
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
      case '"': fputs("\\\"", stdout); break;
      case '\\': fputs("\\\\", stdout); break;
      case '\b': fputs("\\b", stdout); break;
      case '\f': fputs("\\f", stdout); break;
      case '\n': fputs("\\n", stdout); break;
      case '\r': fputs("\\r", stdout); break;
      case '\t': fputs("\\t", stdout); break;
      default:
        if (c < 0x20) {
          printf("\\u00%c%c", hex[c >> 4], hex[c & 15]);
        } else {
          putchar(c);
        }
    }
  }
  putchar('"');
}

static void put_str(dw_str s) { put_json_str(s.ptr, s.len); }

static void put_hex(dw_bytes b) {
  static const char hex[] = "0123456789abcdef";
  putchar('"');
  for (size_t i = 0; i < b.len; i++) {
    putchar(hex[b.ptr[i] >> 4]);
    putchar(hex[b.ptr[i] & 15]);
  }
  putchar('"');
}

/* A map as a JSON object; 0, or the result of a cursor that broke. */
static dw_result put_map(dw_map map) {
  dw_str key, value;
  dw_result r;
  putchar('{');
  for (int first = 1; (r = dw_map_next(&map, &key, &value, NULL)) == DW_RESULT_OK; first = 0) {
    if (!first) putchar(',');
    put_str(key);
    putchar(':');
    put_str(value);
  }
  putchar('}');
  return r == DW_RESULT_DONE ? DW_RESULT_OK : r;
}

static void put_state(const uint64_t state[2]) {
  printf("[%" PRIu64 ",%" PRIu64 "]", state[0], state[1]);
}

/* One frame as one JSON line. */
static dw_result put_frame(const dw_frame *f) {
  dw_result r = DW_RESULT_OK;
  switch (f->kind) {
    case DW_FRAME_HANDSHAKE: {
      const dw_handshake *h = &f->body.handshake;
      printf("{\"frame\":\"handshake\",\"source\":%" PRIu32 ",\"uuid\":", h->source);
      if (h->has_uuid) put_str(h->uuid); else fputs("null", stdout);
      fputs(",\"labels\":", stdout);
      if ((r = put_map(h->labels)) != DW_RESULT_OK) return r;
      fputs(",\"metadata\":", stdout);
      if ((r = put_map(h->metadata)) != DW_RESULT_OK) return r;
      printf(",\"clock_anchor_wall_ns\":%" PRId64 ",\"complete\":%s}", h->clock_anchor_wall_ns,
             h->complete ? "true" : "false");
      break;
    }
    case DW_FRAME_INDEX: {
      const dw_index *i = &f->body.index;
      printf("{\"frame\":\"index\",\"source\":%" PRIu32 ",\"stream\":", i->source);
      put_str(i->stream);
      printf(",\"ts\":%" PRId64 ",\"kind\":\"%s\",\"state\":", i->ts,
             i->kind == DW_INDEX_FULL ? "full" : "delta");
      put_state(i->state);
      fputs(",\"blob\":", stdout);
      put_hex(i->blob);
      putchar('}');
      break;
    }
    case DW_FRAME_ROWS: {
      const dw_rows *rows = &f->body.rows;
      printf("{\"frame\":\"rows\",\"source\":%" PRIu32 ",\"seq\":%" PRIu64 ",\"index_state\":",
             rows->source, rows->seq);
      put_state(rows->index_state);
      fputs(",\"rows\":[", stdout);
      dw_row_cursor cursor = rows->rows;
      dw_row row;
      for (int first = 1; (r = dw_rows_next(&cursor, &row, NULL)) == DW_RESULT_OK; first = 0) {
        fputs(first ? "{\"stream\":" : ",{\"stream\":", stdout);
        put_str(row.stream);
        printf(",\"ts\":%" PRId64 ",\"wall_offset\":%" PRId64 ",\"row\":", row.ts,
               row.wall_offset);
        put_hex(row.row);
        putchar('}');
      }
      if (r != DW_RESULT_DONE) return r;
      fputs("]}", stdout);
      break;
    }
    case DW_FRAME_SEGMENT: {
      const dw_segment *s = &f->body.segment;
      printf("{\"frame\":\"segment\",\"source\":%" PRIu32 ",\"stream\":", s->source);
      put_str(s->stream);
      printf(",\"rows\":%" PRIu64 ",\"first_ts\":%" PRId64 ",\"last_ts\":%" PRId64 ",\"bytes\":",
             s->rows, s->first_ts, s->last_ts);
      put_hex(s->bytes);
      fputs(",\"caller_index\":", stdout);
      if (s->has_caller_index) put_hex(s->caller_index); else fputs("null", stdout);
      putchar('}');
      break;
    }
    case DW_FRAME_CLOCK_OFFSET: {
      const dw_clock_offset *c = &f->body.clock_offset;
      printf("{\"frame\":\"clock_offset\",\"source\":%" PRIu32 ",\"ts\":%" PRId64
             ",\"offset_ns\":%" PRId64 "}",
             c->source, c->ts, c->offset_ns);
      break;
    }
    case DW_FRAME_SOURCE_UPDATE: {
      const dw_source_update *u = &f->body.source_update;
      printf("{\"frame\":\"source_update\",\"source\":%" PRIu32 ",\"ts\":%" PRId64 ",\"labels\":",
             u->source, u->ts);
      if ((r = put_map(u->labels)) != DW_RESULT_OK) return r;
      fputs(",\"metadata\":", stdout);
      if ((r = put_map(u->metadata)) != DW_RESULT_OK) return r;
      putchar('}');
      break;
    }
    default: {
      const dw_unknown *u = &f->body.unknown;
      printf("{\"frame\":\"unknown\",\"kind\":%u,\"payload\":", (unsigned)u->kind);
      put_hex(u->payload);
      putchar('}');
    }
  }
  putchar('\n');
  return DW_RESULT_OK;
}

/* Say the error, after the frames before it, as the tool does. */
static int fail(const char *where, const char *what) {
  fflush(stdout);
  fprintf(stderr, "dump: %s%s\n", where, what);
  return 1;
}

static int fail_with(const char *where, const dw_error *err) {
  char sentence[512];
  size_t n = 0;
  if (dw_error_message(err, sentence, sizeof sentence, &n) != DW_RESULT_OK) {
    snprintf(sentence, sizeof sentence, "%s", dw_result_name(err->result));
  }
  return fail(where, sentence);
}

/* The stream ended with the bytes in hand unconsumed: the library says
 * whether that is a clean end, and if not, the sentence. */
static int ended(const char *where, const struct input *in, uint32_t preamble_read) {
  dw_error err;
  dw_result r = dw_stream_end(in->buf + in->start, in->end - in->start, preamble_read, &err);
  return r == DW_RESULT_OK ? 0 : fail_with(where, &err);
}

static int dump(struct input *in) {
  size_t consumed, needed;
  dw_error err;
  for (;;) {
    dw_result r = dw_check_preamble(in->buf + in->start, in->end - in->start, &consumed,
                                    &needed, &err);
    if (r == DW_RESULT_OK) break;
    if (r != DW_RESULT_INCOMPLETE) return fail_with("preamble: ", &err);
    int got = fill(in, needed);
    if (got < 0) return fail("preamble: ", "the transport failed");
    if (got == 0) return ended("preamble: ", in, 0);
  }
  in->start += consumed;
  in->offset += consumed;

  for (uint64_t number = 1;; number++) {
    char where[96];
    dw_frame frame;
    dw_result r;
    while ((r = dw_decode(in->buf + in->start, in->end - in->start, &frame, &consumed, &needed,
                          &err)) == DW_RESULT_INCOMPLETE) {
      int got = fill(in, needed);
      if (got > 0) continue;
      snprintf(where, sizeof where, "frame %" PRIu64 " (stream byte %" PRIu64 "): ", number,
               in->offset);
      if (got < 0) return fail(where, "the transport failed");
      return ended(where, in, 1); /* a clean end only at a frame boundary */
    }
    if (r != DW_RESULT_OK) {
      snprintf(where, sizeof where, "frame %" PRIu64 " (stream byte %" PRIu64 "): ", number,
               in->offset);
      return fail_with(where, &err);
    }
    if ((r = put_frame(&frame)) != DW_RESULT_OK) return fail("", dw_result_name(r));
    in->start += consumed;
    in->offset += consumed;
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: dump FILE   (FILE - is standard input)\n");
    return 2;
  }
  struct input in = {0};
  in.cap = 64 * 1024;
  if (!(in.buf = malloc(in.cap))) return fail("", "out of memory");
  if (strcmp(argv[1], "-") == 0) {
    in.file = stdin;
  } else if (!(in.file = fopen(argv[1], "rb"))) {
    fprintf(stderr, "dump: cannot open %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  static char out[64 * 1024];
  setvbuf(stdout, out, _IOFBF, sizeof out);
  int status = dump(&in);
  if (fflush(stdout) != 0) status = 1;
  if (in.file != stdin) fclose(in.file);
  free(in.buf);
  return status;
}
