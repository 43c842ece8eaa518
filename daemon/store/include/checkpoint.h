/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* WAL checkpoints on a thread of their own (store_set_checkpoint_handler()): the writer's commits
 * on the event loop only ask for one, so that no tick, maintenance step or call waiting behind
 * them waits for a checkpoint's writes and sync of the database file. */

typedef struct Checkpointer Checkpointer;

/* Starts the thread; it checkpoints the database at path when asked. */
int checkpointer_new(const char *path, Checkpointer **ret);
/* Asks for a checkpoint soon; requests while one is due or running are one (forced if any of
 * them was: store_checkpoint()). Any thread; a store_set_checkpoint_handler() function
 * (userdata: the Checkpointer). */
void checkpointer_request(void *userdata, bool force);
/* Waits, at most timeout_usec, for the checkpoint the thread is running to end; whether one was
 * running. Another connection's checkpoint running makes SQLite refuse one at once (SQLITE_BUSY,
 * without its busy handler): a forced checkpoint that found one waits for it, then tries again. */
bool checkpointer_wait_idle(Checkpointer *c, uint64_t timeout_usec);
/* Runs a checkpoint still asked for, then stops the thread. */
Checkpointer *checkpointer_free(Checkpointer *c);
