/* SPDX-License-Identifier: MIT */
#pragma once

/* Whether the kernel keeps its delay accounting (task_struct.delays: what taskstats reports, and
 * what the source delay_accounting reads per process) right now. From Linux 5.14 it is off unless
 * the sysctl kernel.task_delayacct is 1 (or the kernel was booted with delayacct), and the sysctl
 * can change at any time: read once per tick. Before 5.14 there is no sysctl and the kernel keeps
 * it unless booted with nodelayacct. Internal to the collector; pure but for the files it reads,
 * which are under a proc root (a fake one in the unit tests). */

#include <stdbool.h>

#define DELAYACCT_SYSCTL "sys/kernel/task_delayacct"

typedef struct DelayAcct {
        int fd;         /* the sysctl, open; -1 where the kernel has none */
        bool boot_on;   /* without the sysctl: whether the kernel command line left it on */
} DelayAcct;

/* Opens the sysctl under proc_fd, or reads the command line where the kernel has none. -errno
 * for anything but a missing sysctl. */
int delayacct_open(int proc_fd, DelayAcct *ret);
void delayacct_close(DelayAcct *d);
/* 1 when the kernel keeps delay accounting now, 0 when it does not; -errno (the sysctl unreadable
 * or not a number). */
int delayacct_state(const DelayAcct *d);
/* Writes 1 to the sysctl (trapstatd --enable-delay-accounting): -ENOENT where the kernel has none
 * (before 5.14: then it is on unless booted with nodelayacct), -EPERM without CAP_SYS_ADMIN. */
int delayacct_enable(int proc_fd);
