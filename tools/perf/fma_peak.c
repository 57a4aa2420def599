// The physical limit of this CPU's f32 arithmetic, measured: fused multiply-add throughput
// with AVX2 (8 lanes) and AVX-512 (16 lanes), on one thread and on every thread at once.
//
// Each thread runs CHAINS independent accumulators per vector width, so the FMA latency (4
// cycles on current x86) is hidden behind enough work to keep both FMA ports busy; one FMA is
// 2 flops per lane. Every chain feeds the result, so the compiler cannot drop the work; at -O3
// the accumulators live in registers (at -O2 gcc keeps them on the stack and the loop measures
// store-to-load forwarding instead: check with objdump that the loop is 12 vfmadd and a branch). This is
// the ceiling "% of peak" in docs/performance.md is measured against. Build and run (gcc,
// nothing else):
//
//   gcc -O3 -pthread tools/perf/fma_peak.c -o /tmp/fma_peak
//   /tmp/fma_peak            # threads = online CPUs; or: /tmp/fma_peak THREADS
//
// On a CPU without AVX-512 the AVX-512 rows say so and are skipped (cpuid at run time).

#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CHAINS 12
#define ITERATIONS 20000000L

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((target("avx2,fma"))) static float run_avx2(long iterations) {
  __m256 acc[CHAINS];
  for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_ps(1.0f + c * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iterations; i++) {
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  float out[8], sum = 0;
  for (int c = 1; c < CHAINS; c++) acc[0] = _mm256_add_ps(acc[0], acc[c]);
  _mm256_storeu_ps(out, acc[0]);
  for (int i = 0; i < 8; i++) sum += out[i];
  return sum;
}

__attribute__((target("avx512f"))) static float run_avx512(long iterations) {
  __m512 acc[CHAINS];
  for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps(1.0f + c * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < iterations; i++) {
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  for (int c = 1; c < CHAINS; c++) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  return _mm512_reduce_add_ps(acc[0]);
}

struct job {
  int wide;
  long iterations;
  float result;
};

static void *work(void *arg) {
  struct job *j = arg;
  j->result = j->wide ? run_avx512(j->iterations) : run_avx2(j->iterations);
  return NULL;
}

// GFLOP/s of `threads` threads each running `iterations` iterations at the given width.
static double measure(int wide, int threads, long iterations) {
  pthread_t ids[256];
  struct job jobs[256];
  double start = now();
  for (int t = 0; t < threads; t++) {
    jobs[t] = (struct job){wide, iterations, 0};
    pthread_create(&ids[t], NULL, work, &jobs[t]);
  }
  float sink = 0;
  for (int t = 0; t < threads; t++) {
    pthread_join(ids[t], NULL);
    sink += jobs[t].result;
  }
  double seconds = now() - start;
  if (sink == 12345.0f) printf("(sink %f)\n", sink);
  double lanes = wide ? 16 : 8;
  return 2.0 * lanes * CHAINS * (double)iterations * threads / seconds / 1e9;
}

int main(int argc, char **argv) {
  int online = (int)sysconf(_SC_NPROCESSORS_ONLN);
  int threads = argc > 1 ? atoi(argv[1]) : online;
  if (threads < 1 || threads > 256) {
    fprintf(stderr, "threads must be 1..256, got %s\n", argv[1]);
    return 1;
  }
  __builtin_cpu_init();
  int has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  int has_avx512 = __builtin_cpu_supports("avx512f");
  printf("f32 FMA throughput, %d chains, %ld iterations, best of 5 (GFLOP/s, 1 FMA = 2 flops)\n",
         CHAINS, ITERATIONS);
  printf("%-8s %10s %12s\n", "width", "1 thread", "threads");
  for (int wide = 0; wide <= 1; wide++) {
    const char *name = wide ? "AVX-512" : "AVX2";
    if (!(wide ? has_avx512 : has_avx2)) {
      printf("%-8s not supported by this CPU\n", name);
      continue;
    }
    double one = 0, all = 0;
    for (int round = 0; round < 5; round++) {
      double a = measure(wide, 1, ITERATIONS), b = measure(wide, threads, ITERATIONS);
      one = a > one ? a : one;
      all = b > all ? b : all;
    }
    printf("%-8s %10.1f %9.1f (%d)\n", name, one, all, threads);
  }
  return 0;
}
