/*
 * installed FILE: a program as a C project builds it against the installed
 * library, `cc installed.c $(pkg-config --cflags --libs dendro-wire)`: the
 * header included twice (a project's own headers each include it), the
 * library loaded checked against the header, a subscriber and a publisher
 * made in static storage the header sizes, and FILE's preamble checked.
 * It prints "dendro-wire VERSION (ABI N)" and exits 0, or says what failed.
 *
 * cargo xtask c builds it as C99 and as C++11, -pedantic -Werror, and
 * links it with the archive alone too.
 */
#include <dendro_wire.h>
#include <dendro_wire.h>

#include <stdio.h>

static DW_PUBLISHER_STORAGE(4) publisher_storage;
static uint64_t subscriber_storage[DW_SUBSCRIBER_SIZE(16) / 8];

static int fail(const char *what) {
  fprintf(stderr, "installed: %s\n", what);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) return fail("usage: installed FILE");
  if (dw_version() != DW_VERSION || dw_abi_version() != DW_ABI_VERSION) {
    return fail("the library loaded is not the one this header describes");
  }
  dw_subscriber *sub;
  if (dw_subscriber_init(subscriber_storage, sizeof subscriber_storage, 16, &sub, NULL) !=
      DW_RESULT_OK) {
    return fail("a subscriber of 16 sources does not fit DW_SUBSCRIBER_SIZE(16)");
  }
  dw_publisher *pub;
  dw_publisher_config config;
  config.full_every = 60;
  config.frame_buffer = 4096;
  if (sizeof publisher_storage != dw_publisher_size(4) ||
      sizeof subscriber_storage != dw_subscriber_size(16)) {
    return fail("the header's sizes are not the library's");
  }
  if (dw_publisher_init(publisher_storage.bytes, sizeof publisher_storage, 4, &config, &pub,
                        NULL) != DW_RESULT_OK) {
    return fail("a publisher of 4 sources does not fit DW_PUBLISHER_STORAGE(4)");
  }
  uint8_t head[DW_PREAMBLE_BYTES];
  FILE *file = fopen(argv[1], "rb");
  if (!file || fread(head, 1, sizeof head, file) != sizeof head) return fail("cannot read FILE");
  fclose(file);
  size_t used, needed;
  if (dw_check_preamble(head, sizeof head, &used, &needed, NULL) != DW_RESULT_OK) {
    return fail("FILE is not a dendro stream");
  }
  for (size_t i = 0; i < DW_PREAMBLE_BYTES; i++) {
    if (head[i] != dw_preamble[i]) return fail("FILE's preamble is not this library's");
  }
  if (dw_publisher_release(pub, NULL) != DW_RESULT_OK ||
      dw_subscriber_release(sub, NULL) != DW_RESULT_OK) {
    return fail("release failed");
  }
  printf("dendro-wire %u.%u.%u (ABI %u)\n", (unsigned)DW_VERSION_MAJOR,
         (unsigned)DW_VERSION_MINOR, (unsigned)DW_VERSION_PATCH, (unsigned)DW_ABI_VERSION);
  return 0;
}
