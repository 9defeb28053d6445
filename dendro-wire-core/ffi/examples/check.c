/*
 * check FILE: the subscriber's rules over a whole stream, as
 * `dendro-wire check --json FILE` applies them, and the same one JSON line:
 * its counts, or where and why it broke (exit status 1).
 *
 * The stream is read whole into memory and decoded in place. Every frame
 * goes to a subscriber allowing the tool's 1024 sources, in storage sized
 * for them (DW_SUBSCRIBER_SIZE); the bytes left at the end go to
 * dw_stream_end, which says whether the stream was cut. Every sentence is
 * the library's.
 *
 * cargo xtask c builds it with -fsanitize=address,undefined and compares
 * its line with the tool's over every stream under testdata/, a generated
 * and damaged set, and a stream of twelve sources.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dendro_wire.h"
#include "tally.h"
#include "whole_file.h"

static void put_json_str(const char *s, size_t len) {
  static const char hex[] = "0123456789abcdef";
  putchar('"');
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      putchar('\\');
      putchar(c);
    } else if (c == '\n') {
      fputs("\\n", stdout);
    } else if (c < 0x20) {
      printf("\\u00%c%c", hex[c >> 4], hex[c & 15]);
    } else {
      putchar(c);
    }
  }
  putchar('"');
}

/* The tool's line for a stream that broke: where, and the library's words. */
static int broke(uint64_t frame, uint64_t offset, const dw_error *err) {
  char sentence[512], line[640];
  size_t n = 0;
  if (dw_error_message(err, sentence, sizeof sentence, &n) != DW_RESULT_OK) {
    n = (size_t)snprintf(sentence, sizeof sentence, "%s", dw_result_name(err->result));
  }
  int len = frame == 0 ? snprintf(line, sizeof line, "preamble: %.*s", (int)n, sentence)
                       : snprintf(line, sizeof line, "frame %" PRIu64 " (stream byte %" PRIu64
                                                     "): %.*s",
                                  frame, offset, (int)n, sentence);
  fputs("{\"error\":", stdout);
  put_json_str(line, len < (int)sizeof line ? (size_t)len : sizeof line - 1);
  printf(",\"frame\":%" PRIu64 ",\"offset\":%" PRIu64 "}\n", frame, frame == 0 ? 0 : offset);
  return 1;
}

static int check(const uint8_t *buf, size_t len, void *storage, size_t storage_len) {
  dw_subscriber *sub;
  dw_error err;
  if (dw_subscriber_init(storage, storage_len, DW_SUBSCRIBER_MAX_SOURCES, &sub, &err) !=
      DW_RESULT_OK) {
    return broke(0, 0, &err);
  }
  struct tally t = {0};
  struct stopped at;
  if (check_stream(buf, len, sub, &t, NULL, &at, &err) != DW_RESULT_OK) {
    return broke(at.frame, at.offset, &err);
  }
  put_tally(&t);
  putchar('\n');
  return dw_subscriber_release(sub, &err) == DW_RESULT_OK ? 0 : broke(0, 0, &err);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: check FILE\n");
    return 2;
  }
  size_t len;
  uint8_t *buf = whole_file(argv[1], &len);
  if (!buf) return 2;
  /* The subscriber's storage: the tool's limit, aligned for any target. */
  size_t storage_len = DW_SUBSCRIBER_SIZE(DW_SUBSCRIBER_MAX_SOURCES);
  uint64_t *storage = malloc(storage_len);
  if (!storage) {
    fprintf(stderr, "check: out of memory\n");
    return 2;
  }
  int status = check(buf, len, storage, storage_len);
  free(storage);
  free(buf);
  return status;
}
