/*
 * bench FILE ROUNDS MILLIS: the decoder's rate through the C API, from C.
 * FILE holds frames (no preamble), as the Rust decoder's benchmark decodes
 * them. Each round decodes the whole body over and over for MILLIS ms, in
 * two ways: frames only (the row count read), and every row stepped with
 * dw_rows_next and read (timestamp, stream and row lengths), the same
 * checksum the Rust benchmark folds. It prints the best seconds per pass
 * of each, one line each: "decode S" and "visit S".
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

/* One pass over the body: a checksum, or UINT64_MAX if a frame failed. */
static uint64_t pass(const uint8_t *body, size_t len, int visit) {
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
    } else if (!visit) {
      sum += frame.body.rows.count;
    } else {
      dw_row_cursor cursor = frame.body.rows.rows;
      dw_row row;
      while (dw_rows_next(&cursor, &row) == DW_RESULT_OK) {
        sum += (uint64_t)row.ts ^ (uint64_t)row.row.len ^ (uint64_t)row.stream.len;
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
  for (int visit = 0; visit < 2; visit++) {
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
      double start = now(), elapsed;
      long n = 0;
      do {
        uint64_t sum = pass(body, (size_t)size, visit);
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
    printf("%s %.9f\n", visit ? "visit" : "decode", best);
  }
  free(body);
  (void)sink;
  return 0;
}
