/* The sdfed command line: each subcommand lives in its own cmd_*.c file;
 * option parsing, model opening and paths come from native/. */
#ifndef SDFED_CLI_H
#define SDFED_CLI_H

#include "native/args.h"
#include "native/model.h"
#include "native/paths.h"

int cmd_convert(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_encode_text(int argc, char **argv);
int cmd_encode_image(int argc, char **argv);
int cmd_check_reference(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_task(int argc, char **argv);

#endif
