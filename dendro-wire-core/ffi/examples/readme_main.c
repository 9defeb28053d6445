/*
 * readme FILE: the C example README and the book show (its `read_stream`, which
 * `cargo xtask c` takes from each page as it stands) over a file read
 * whole; its exit status is the example's.
 */
#include <stdio.h>
#include <stdlib.h>

#include <dendro_wire.h>

#include "whole_file.h"

int read_stream(const uint8_t *buf, size_t len);

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: readme FILE\n");
    return 2;
  }
  size_t len;
  uint8_t *buf = whole_file(argv[1], &len);
  if (!buf) return 2;
  int status = read_stream(buf, len);
  free(buf);
  return status;
}
