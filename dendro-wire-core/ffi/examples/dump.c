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
#include "frame_json.h"

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
