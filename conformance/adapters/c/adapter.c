/*
 * The conformance suite's adapter for the C API (conformance/README.md
 * states the contract): a stream on standard input, decoded in place with
 * dw_decode and admitted frame by frame by a subscriber allowing the
 * tool's 1024 sources; each frame admitted printed as a JSON line
 * (frame_json.h), then the end line: the tally (tally.h), or the refusal's
 * rule (from dw_error), frame, offset and the library's sentence.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "dendro_wire.h"
#include "frame_json.h"
#include "tally.h"
#include "whole_file.h"

/* The suite's name for the rule a dw_error says was broken. */
static const char *rule_name(const dw_error *err) {
  static const char *const rules[] = {
      "Other",           "NotADendroStream", "UnsupportedVersion", "ZeroLength",
      "FrameTooLarge",   "EndsEarly",        "NotABool",           "NotAPresenceByte",
      "NotAnIndexKind",  "NotUtf8",          "NotACanonicalUuid",  "KeysNotAscending",
      "CountTooLarge",   "TrailingBytes",    "KnownKindAsUnknown", "BufferTooSmall",
  };
  switch (err->result) {
    case DW_RESULT_TRUNCATED: return "Truncated";
    case DW_RESULT_MALFORMED:
      return err->rule < sizeof rules / sizeof rules[0] ? rules[err->rule] : "Other";
    case DW_RESULT_PROTOCOL_ERROR:
      switch (err->reason) {
        case DW_PROTOCOL_UNKNOWN_SOURCE: return "UnknownSource";
        case DW_PROTOCOL_DUPLICATE_HANDSHAKE: return "DuplicateHandshake";
        case DW_PROTOCOL_TOO_MANY_SOURCES: return "TooManySources";
        default: return "Other";
      }
    default: return "Other";
  }
}

static int refused(uint64_t frame, uint64_t offset, const dw_error *err) {
  char sentence[512];
  size_t n = 0;
  if (dw_error_message(err, sentence, sizeof sentence, &n) != DW_RESULT_OK) {
    n = (size_t)snprintf(sentence, sizeof sentence, "%s", dw_result_name(err->result));
  }
  printf("{\"end\":\"refused\",\"subscriber\":true,\"rule\":\"%s\",\"frame\":%" PRIu64
         ",\"offset\":%" PRIu64 ",\"message\":",
         rule_name(err), frame, offset);
  put_json_str(sentence, n < sizeof sentence ? n : sizeof sentence - 1);
  puts("}");
  return 0;
}

/* A frame admitted, as its JSON line (the decoder checked every cursor). */
static void print(const dw_frame *f) { (void)put_frame(f); }

static int run(const uint8_t *buf, size_t len, void *storage, size_t storage_len) {
  dw_subscriber *sub;
  dw_error err;
  if (dw_subscriber_init(storage, storage_len, DW_SUBSCRIBER_MAX_SOURCES, &sub, &err) !=
      DW_RESULT_OK) {
    return 2;
  }
  struct tally t = {0};
  struct stopped at;
  if (check_stream(buf, len, sub, &t, print, &at, &err) != DW_RESULT_OK) {
    return refused(at.frame, at.offset, &err);
  }
  fputs("{\"end\":\"clean\",\"subscriber\":true,\"tally\":", stdout);
  put_tally(&t);
  puts("}");
  return dw_subscriber_release(sub, &err) == DW_RESULT_OK ? 0 : 2;
}

int main(void) {
  size_t len;
  uint8_t *buf = whole_file("/dev/stdin", &len);
  size_t storage_len = DW_SUBSCRIBER_SIZE(DW_SUBSCRIBER_MAX_SOURCES);
  uint64_t *storage = malloc(storage_len);
  if (!buf || !storage) {
    fprintf(stderr, "conformance-c: out of memory\n");
    return 2;
  }
  int status = run(buf, len, storage, storage_len);
  free(storage);
  free(buf);
  return status;
}
