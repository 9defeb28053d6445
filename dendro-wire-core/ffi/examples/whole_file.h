/*
 * whole_file.h: a file read whole into memory, for the examples that
 * decode a stream held in one buffer (check.c, readme_main.c).
 */
#ifndef WHOLE_FILE_H
#define WHOLE_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The bytes of `path` in a buffer to free(), their count in *len; NULL
 * (said on stderr) if it cannot be read. */
static uint8_t *whole_file(const char *path, size_t *len) {
  FILE *file = fopen(path, "rb");
  if (!file) {
    perror(path);
    return NULL;
  }
  size_t cap = 1 << 16, n;
  uint8_t *buf = malloc(cap);
  *len = 0;
  while (buf && (n = fread(buf + *len, 1, cap - *len, file)) > 0) {
    *len += n;
    if (*len == cap) {
      uint8_t *grown = realloc(buf, cap *= 2);
      if (!grown) free(buf);
      buf = grown;
    }
  }
  fclose(file);
  if (!buf) fprintf(stderr, "%s: out of memory\n", path);
  return buf;
}

#endif /* WHOLE_FILE_H */
