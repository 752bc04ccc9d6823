/* The sdfed command line: each subcommand lives in its own cmd_*.c file;
 * option parsing, model opening and paths come from native/. */
#ifndef SDFED_CLI_H
#define SDFED_CLI_H

#include "native/args.h"
#include "native/model.h"
#include "native/paths.h"

/* Each command's help: its usage line first ("usage: sdfed ..."), then
 * what it does and its options; `sdfed COMMAND --help` prints it. */
extern const char cmd_convert_help[], cmd_info_help[], cmd_tokenize_help[], cmd_encode_text_help[],
    cmd_encode_image_help[], cmd_check_reference_help[], cmd_sim_help[], cmd_task_help[];

int cmd_convert(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_encode_text(int argc, char **argv);
int cmd_encode_image(int argc, char **argv);
int cmd_check_reference(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_task(int argc, char **argv);

#endif
