/* SPDX-License-Identifier: MIT */
/*
 * Commands to the engine: one at a time as functions.sh's proc_cmd writes
 * them, or the pg_ctrl / pg_thread N / pg_set DEV lines of a --script file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* proc_cmd() of functions.sh: write, then complain unless the reply is OK */
void proc_cmd(const char *file, const char *cmd)
{
	int err = uskb_pktgen_write(cli.pg, file, cmd);
	const char *res = uskb_pktgen_result(cli.pg, file);
	/*
	 * A device that could not be opened (a missing interface, a taken xdp:
	 * queue): its reason names the fix, so it comes first. The device layer
	 * says "no error" when add_device failed before any open (a name used
	 * twice is -EBUSY too).
	 */
	char *end;
	long th = strtol(file + (strncmp(file, "kpktgend_", 9) ? 0 : 9), &end, 10);
	/* ENOENT: a thread file that does not exist, or (add_device) a file the device did not find */
	bool no_thread = err == -ENOENT && !strncmp(file, "kpktgend_", 9) &&
			 (*end || end == file + 9 || th < 0 || th >= uskb_pktgen_nthreads(cli.pg));
	bool dev_failed = err && !no_thread && err != -ENAMETOOLONG && !strncmp(cmd, "add_device", 10) &&
			  strcmp(uskb_dev_strerror(), "no error");

	if (cli.dry_run)
		printf("%s > %s\n", cmd, file); /* what would run, as functions.sh writes it */
	if (dev_failed)
		fprintf(stderr, "uskb-pktgen: %s\n", uskb_dev_strerror());
	if (no_thread)
		fprintf(stderr, "uskb-pktgen: no thread %s: the engine has %d (kpktgend_0 to %d)\n",
			file, uskb_pktgen_nthreads(cli.pg), uskb_pktgen_nthreads(cli.pg) - 1);
	if (cli.verbose)
		fprintf(stderr, "cmd: %s > %s%s%s\n", cmd, file, res ? "\n  Result: " : "",
			res ? res : "");
	else if (strcmp(file, "pgctrl") && res && strncmp(res, "OK:", 3) && !dev_failed)
		fprintf(stderr, "Result: %s\n", res);
	if (err) {
		if (!dev_failed || cli.verbose)
			fprintf(stderr, "ERROR: Write error(%d: %s) occurred cmd: \"%s > %s\"\n", -err,
				strerror(-err), cmd, file);
		cli_free_engine();
		exit(5);
	}
}

void proc_cmdf(const char *file, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	proc_cmd(file, buf);
}

static char *unquote(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
	if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0]) {
		s[n - 1] = 0;
		s++;
	}
	return s;
}

int run_script(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, ret = 0;
	bool ran = false;

	if (!f) {
		fprintf(stderr, "uskb-pktgen: cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	/* lines of any length: a long one is never split into two commands */
	while (getline(&line, &cap, f) >= 0) {
		char *s = line, *word, *rest;

		lineno++;
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '#' || *s == '\n')
			continue;
		word = strsep(&s, " \t\n");
		rest = s ? s : (char *)"";
		if (!strcmp(word, "pg_ctrl")) {
			rest = unquote(rest);
			if (!strcmp(rest, "start")) {
				if (cli.dry_run)
					printf("start > pgctrl\n"); /* what would run, sent nothing */
				else
					start_run();
				ran = true;
			} else {
				proc_cmd("pgctrl", rest);
			}
		} else if (!strcmp(word, "pg_thread") || !strcmp(word, "pg_set")) {
			char file[300], *arg;

			while (*rest == ' ' || *rest == '\t')
				rest++;
			arg = strsep(&rest, " \t\n");
			if (!arg || !*arg || !rest) {
				fprintf(stderr, "uskb-pktgen: %s:%d: %s needs a %s and a command\n", path,
					lineno, word, word[3] == 't' ? "thread number" : "device");
				ret = 1;
				break;
			}
			if (word[3] == 't')
				snprintf(file, sizeof(file), "kpktgend_%s", arg);
			else
				snprintf(file, sizeof(file), "%s", unquote(arg));
			{
				/* pg_thread 0 "add_device" v0: the words make one command */
				char *cmd = malloc(strlen(rest) + 1), *tok;
				size_t n = 0;

				if (!cmd) {
					fprintf(stderr, "uskb-pktgen: %s:%d: out of memory\n", path, lineno);
					ret = 1;
					break;
				}
				while ((tok = strsep(&rest, " \t\n"))) {
					if (!*tok)
						continue;
					tok = unquote(tok); /* "add_device" v0 */
					if (n)
						cmd[n++] = ' ';
					memcpy(cmd + n, tok, strlen(tok));
					n += strlen(tok);
				}
				cmd[n] = 0;
				proc_cmd(file, unquote(cmd));
				free(cmd);
			}
		} else {
			fprintf(stderr,
				"uskb-pktgen: %s:%d: unknown line \"%s\": use pg_ctrl, pg_thread N or pg_set DEV\n",
				path, lineno, word);
			ret = 1;
			break;
		}
	}
	if (!ret && ferror(f)) {
		fprintf(stderr, "uskb-pktgen: reading %s: %s\n", path, strerror(errno));
		ret = 1;
	}
	free(line);
	if (f != stdin)
		fclose(f);
	if (!ret && !ran && !cli.dry_run)
		fprintf(stderr, "uskb-pktgen: %s has no \"pg_ctrl start\": nothing was sent\n", path);
	return ret;
}
