/* How this machine brings a file's bytes in: read() into a buffer, or mmap.
 * Each mode touches every 64th byte (as a scan must) and prints a sum so that the
 * touches are not optimised away. Used by benches/read_vs_mmap.sh (docs/performance.md,
 * "The fifth change of 2026-12-06").
 *
 *   read_vs_mmap MODE FILE
 *   MODE: read      read() 1 MiB at a time into a page-aligned buffer
 *         read+16   the same into a buffer 16 bytes into its page (as malloc gives)
 *         mmap      the whole file mapped once, MADV_SEQUENTIAL
 *         windows   1 MiB windows mapped and unmapped in turn
 *         dontneed  the whole file mapped, each 1 MiB dropped (MADV_DONTNEED) after use
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK (1u << 20)

static unsigned long touch(const char *p, size_t n) {
  unsigned long sum = 0;
  for (size_t i = 0; i < n; i += 64) sum += (unsigned char)p[i];
  return sum;
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: read_vs_mmap MODE FILE\n"); return 2; }
  const char *mode = argv[1];
  int fd = open(argv[2], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) { perror(argv[2]); return 1; }
  size_t n = (size_t)st.st_size;
  unsigned long sum = 0;
  if (!strcmp(mode, "read") || !strcmp(mode, "read+16")) {
    size_t skew = strcmp(mode, "read") ? 16 : 0;
    char *page = mmap(NULL, BLOCK + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) { perror("mmap"); return 1; }
    char *buf = page + skew;
    ssize_t r;
    while ((r = read(fd, buf, BLOCK)) > 0) sum += touch(buf, (size_t)r);
  } else if (!strcmp(mode, "mmap") || !strcmp(mode, "dontneed")) {
    char *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 1; }
    int drop = !strcmp(mode, "dontneed");
    if (!drop) madvise(p, n, MADV_SEQUENTIAL);
    for (size_t off = 0; off < n; off += BLOCK) {
      size_t len = n - off < BLOCK ? n - off : BLOCK;
      sum += touch(p + off, len);
      if (drop) madvise(p + off, len, MADV_DONTNEED);
    }
  } else if (!strcmp(mode, "windows")) {
    for (size_t off = 0; off < n; off += BLOCK) {
      size_t len = n - off < BLOCK ? n - off : BLOCK;
      char *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, (off_t)off);
      if (p == MAP_FAILED) { perror("mmap"); return 1; }
      sum += touch(p, len);
      munmap(p, len);
    }
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  printf("%lu\n", sum);
  return 0;
}
