/* Semihosting on a Cortex-M (bkpt 0xAB): what the agent needs of the host
 * QEMU runs it on, with no libc: files, the console, the command line and
 * exit. */
#ifndef SEMIHOST_H
#define SEMIHOST_H

#include <stddef.h>
#include <stdint.h>

static inline int32_t semihost(int32_t op, const void *args) {
  register int32_t r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = args;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

/* A file created for writing (mode "wb"), or -1; ":tt" in that mode is
 * the host's standard output. */
static inline int32_t host_create(const char *name, size_t len) {
  const uint32_t args[3] = {(uint32_t)name, 5, (uint32_t)len};
  return semihost(0x01, args);
}

/* Whether all `len` bytes were written. */
static inline int host_write(int32_t file, const void *buf, size_t len) {
  const uint32_t args[3] = {(uint32_t)file, (uint32_t)buf, (uint32_t)len};
  return semihost(0x05, args) == 0;
}

static inline int host_close(int32_t file) {
  const uint32_t args[1] = {(uint32_t)file};
  return semihost(0x02, args) == 0;
}

/* The command line into `buf` (NUL-terminated), or -1. */
static inline int32_t host_command_line(char *buf, size_t len) {
  uint32_t args[2] = {(uint32_t)buf, (uint32_t)len};
  return semihost(0x15, args);
}

/* Print to QEMU's standard output: the console ":tt", opened for
 * writing once. */
static inline void host_print(const char *s) {
  static int32_t console = -1;
  if (console < 0) console = host_create(":tt", 3);
  size_t len = 0;
  while (s[len]) len++;
  if (console >= 0) host_write(console, s, len);
}

/* Stop QEMU: status 0 when `ok` (ADP_Stopped_ApplicationExit), else 1. */
static inline void host_exit(int ok) {
  semihost(0x18, (const void *)(uintptr_t)(ok ? 0x20026u : 0x20023u));
  for (;;) {
  }
}

#endif
