/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* 1234 -> "1.2k", 5 -> "5"; buf must hold 16 bytes. */
const char *format_count(uint64_t n, char buf[static 16]);
/* Microseconds since the epoch -> "2026-11-22 04:05:06" in local time; buf 32 bytes. */
const char *format_time_usec(uint64_t usec, char buf[static 32]);
/* A duration in µs -> "2h03m", "45s", "120ms"; buf 32 bytes. */
const char *format_duration_usec(uint64_t usec, char buf[static 32]);

/* Header line and one row per Top row: PID COMM USER KERNEL MINOR MAJOR READ WRITE EXEC PROT UNIT. */
void print_top_table(FILE *f, json_t *rows, int max_rows);
/* A process header, then one line per sample and a total. */
void print_history(FILE *f, json_t *reply);
void print_status(FILE *f, json_t *reply);
