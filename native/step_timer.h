/* A device measured: the seconds a local step of the task's method takes at
 * each of the task's local_prompt.lengths on these kernels, timed on the
 * client's own training samples (fed/local_prompt.h's step times), with an
 * optional sleep after each step (a slow device, for tests). */
#ifndef SDFED_NATIVE_STEP_TIMER_H
#define SDFED_NATIVE_STEP_TIMER_H

#include "fed/task.h"
#include "method/local_training.h"

/* The steps timed at each length (after one untimed); the median is kept. */
enum { STEP_TIMER_STEPS = 3 };

/* step_s (local_prompt.n_lengths) = the median seconds of STEP_TIMER_STEPS
 * steps at each length, on batches of `samples` (the client's training
 * samples; its test samples when it has none), sleep_ms slept after each. */
int native_step_timer_measure(const sdfed_task *t, const sdfed_clip_model *m, const sdfed_kernels *k,
                              const sdfed_classes *cls, const sdfed_feature_set *samples, int sleep_ms, double *step_s,
                              sdfed_arena *arena, sdfed_error *err);

/* Sleeps ms milliseconds (none when ms <= 0). */
void native_step_timer_sleep_ms(int ms);

#endif
