/* written by kiln build-c beside model.c, model.h and weights.c: runs the model on raw
   float32 files and prints raw float32. The same for every model: standalone_c.py
   copies it from kiln/export/csrc/main.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"

static int read_input(const char *path, float *dst, long count, int k) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) { fprintf(stderr, "model: cannot open input %d: %s\n", k, path); return 1; }
  size_t got = fread(dst, sizeof(float), (size_t)count, f);
  int extra = (got == (size_t)count) ? fgetc(f) : EOF;
  if (f != stdin) fclose(f);
  if (got != (size_t)count) {
    fprintf(stderr, "model: input %d (%s) is too short: expected %ld float32 values "
            "(%ld bytes), got %zu whole values\n", k, path, count, count * 4L, got);
    return 1;
  }
  if (extra != EOF) {
    fprintf(stderr, "model: input %d (%s) is too long: expected exactly %ld float32 "
            "values (%ld bytes)\n", k, path, count, count * 4L);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const unsigned int one = 1;
  if (*(const unsigned char *)&one != 1) {
    fprintf(stderr, "model: this program reads little-endian float32 only\n");
    return 2;
  }
  int from_stdin = (KILN_MODEL_NUM_INPUTS == 1 && argc == 1);
  if (argc - 1 != KILN_MODEL_NUM_INPUTS && !from_stdin) {
    fprintf(stderr, "usage: %s INPUT_FILE x %d (raw little-endian float32; '-' = stdin)\n",
            argv[0], KILN_MODEL_NUM_INPUTS);
    return 2;
  }
  const float *inputs[KILN_MODEL_NUM_INPUTS + 1];
  float *outputs[KILN_MODEL_NUM_OUTPUTS + 1];
  for (int k = 0; k < KILN_MODEL_NUM_INPUTS; k++) {
    float *buf = malloc(sizeof(float) * (size_t)(kiln_model_input_sizes[k] + 1));
    if (!buf) { fprintf(stderr, "model: out of memory\n"); return 1; }
    if (read_input(from_stdin ? "-" : argv[k + 1], buf, kiln_model_input_sizes[k], k))
      return 1;
    inputs[k] = buf;
  }
  for (int k = 0; k < KILN_MODEL_NUM_OUTPUTS; k++) {
    outputs[k] = malloc(sizeof(float) * (size_t)(kiln_model_output_sizes[k] + 1));
    if (!outputs[k]) { fprintf(stderr, "model: out of memory\n"); return 1; }
  }
  int rc = kiln_model_run(inputs, outputs);
  if (rc != 0) { fprintf(stderr, "model: kiln_model_run failed (%d)\n", rc); return 1; }
  for (int k = 0; k < KILN_MODEL_NUM_OUTPUTS; k++) {
    size_t n = (size_t)kiln_model_output_sizes[k];
    if (fwrite(outputs[k], sizeof(float), n, stdout) != n) {
      fprintf(stderr, "model: cannot write output %d\n", k);
      return 1;
    }
  }
  return fflush(stdout) == 0 ? 0 : 1;
}
