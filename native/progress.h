/* The progress line of a long task (reading, checking or encoding a
 * folder's images) on stderr, kept off every other line: on a terminal it
 * is rewritten in place ("\r...", cleared to the end) at most four times a
 * second and cleared when the task ends; into a file or a pipe it is a
 * line of its own every ten seconds (none for a task that takes less).
 * What a task found is for its caller to print after it (a summary line);
 * anything a program prints while a task may be under way (native_cli_error does)
 * calls native_progress_end first, so that a message never shares a line with the
 * progress. */
#ifndef SDFED_NATIVE_PROGRESS_H
#define SDFED_NATIVE_PROGRESS_H

/* The task's state now (shown when it is time to). */
void native_progress_show(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* The task ended: its line cleared, the next task's clock started. */
void native_progress_end(void);

#endif
