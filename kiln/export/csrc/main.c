/* written by kiln build-c beside model.c, model.h and weights.c: runs the model on raw
   float32 files and prints raw float32; a model's symbolic sizes are NAME=N arguments
   (those not given: as exported). The same for every model: standalone_c.py copies it
   from kiln/export/csrc/main.c. */
#include <ctype.h>
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

static void usage(const char *program) {
  fprintf(stderr, "usage: %s", program);
  for (int k = 0; k < KILN_MODEL_NUM_SIZES; k++)
    fprintf(stderr, " [%s=N]", kiln_model_size_names[k]);
  fprintf(stderr, " INPUT_FILE x %d (raw little-endian float32; '-' = stdin)\n",
          KILN_MODEL_NUM_INPUTS);
}

/* NAME=N for one of the model's sizes: 1 when taken into sizes, -1 when malformed, 0 when
   the argument names no size (an input file) */
static int size_argument(const char *arg, long long *sizes) {
  const char *eq = strchr(arg, '=');
  if (!eq) return 0;
  for (int k = 0; k < KILN_MODEL_NUM_SIZES; k++) {
    const char *name = kiln_model_size_names[k];
    if (strlen(name) != (size_t)(eq - arg) || strncmp(arg, name, (size_t)(eq - arg)) != 0)
      continue;
    char *end = NULL;
    long long value = strtoll(eq + 1, &end, 10);
    if (end == eq + 1 || *end != '\0' || value < 0) {
      fprintf(stderr, "model: %s takes an integer >= 0, got '%s'\n", name, eq + 1);
      return -1;
    }
    sizes[k] = value;
    return 1;
  }
  for (const char *c = arg; c < eq; c++)
    if (!(isalnum((unsigned char)*c) || *c == '_')) return 0;   /* a file's name */
  fprintf(stderr, "model: this program has no size named '%.*s' (", (int)(eq - arg), arg);
  if (KILN_MODEL_NUM_SIZES == 0) fprintf(stderr, "its sizes were fixed when it was built");
  for (int k = 0; k < KILN_MODEL_NUM_SIZES; k++)
    fprintf(stderr, "%s%s", k ? ", " : "its sizes: ", kiln_model_size_names[k]);
  fprintf(stderr, ")\n");
  return -1;
}

int main(int argc, char **argv) {
  const unsigned int one = 1;
  if (*(const unsigned char *)&one != 1) {
    fprintf(stderr, "model: this program reads little-endian float32 only\n");
    return 2;
  }
  long long sizes[KILN_MODEL_NUM_SIZES + 1] = {0};
  for (int k = 0; k < KILN_MODEL_NUM_SIZES; k++) sizes[k] = kiln_model_exported_sizes[k];
  const char *files[KILN_MODEL_NUM_INPUTS + 1];
  int n_files = 0;
  for (int a = 1; a < argc; a++) {
    int taken = size_argument(argv[a], sizes);
    if (taken < 0) return 2;
    if (taken) continue;
    if (n_files == KILN_MODEL_NUM_INPUTS) { usage(argv[0]); return 2; }
    files[n_files++] = argv[a];
  }
  int from_stdin = (KILN_MODEL_NUM_INPUTS == 1 && n_files == 0);
  if (n_files != KILN_MODEL_NUM_INPUTS && !from_stdin) { usage(argv[0]); return 2; }
  int failed = kiln_model_check_sizes(sizes);
  if (failed != -1) {
    fprintf(stderr, "model: the model does not serve these sizes (");
    for (int k = 0; k < KILN_MODEL_NUM_SIZES; k++)
      fprintf(stderr, "%s%s=%lld", k ? ", " : "", kiln_model_size_names[k], sizes[k]);
    fprintf(stderr, "): %s does not hold\n", kiln_model_conditions[failed]);
    return 2;
  }
  const float *inputs[KILN_MODEL_NUM_INPUTS + 1];
  float *outputs[KILN_MODEL_NUM_OUTPUTS + 1];
  for (int k = 0; k < KILN_MODEL_NUM_INPUTS; k++) {
    long count = kiln_model_input_count(k, sizes);
    float *buf = malloc(sizeof(float) * (size_t)(count + 1));
    if (!buf) { fprintf(stderr, "model: out of memory\n"); return 1; }
    if (read_input(from_stdin ? "-" : files[k], buf, count, k)) return 1;
    inputs[k] = buf;
  }
  for (int k = 0; k < KILN_MODEL_NUM_OUTPUTS; k++) {
    outputs[k] = malloc(sizeof(float) * (size_t)(kiln_model_output_count(k, sizes) + 1));
    if (!outputs[k]) { fprintf(stderr, "model: out of memory\n"); return 1; }
  }
  int rc = kiln_model_run_sized(sizes, inputs, outputs);
  if (rc != 0) { fprintf(stderr, "model: kiln_model_run failed (%d)\n", rc); return 1; }
  for (int k = 0; k < KILN_MODEL_NUM_OUTPUTS; k++) {
    size_t n = (size_t)kiln_model_output_count(k, sizes);
    if (fwrite(outputs[k], sizeof(float), n, stdout) != n) {
      fprintf(stderr, "model: cannot write output %d\n", k);
      return 1;
    }
  }
  return fflush(stdout) == 0 ? 0 : 1;
}
