/* benchexec: runs one command and reports, as one JSON line, its wall time and — with --self —
 * the peak resident set size and the CPU time of that process alone, not of the processes it
 * starts. manifold's benchmark runs every measured command through it, so that Python's own
 * start-up and scheduling never enter a number.
 *
 * Why not wait4()'s rusage: for ru_maxrss the kernel reports the maximum over the child *and* every
 * descendant it reaped (and ru_utime/ru_stime include their CPU time), so a 2 MB meta-plugin that
 * execs a 12 MB Go delegate would report 12 MB. With --self, benchexec instead traces the child
 * (PTRACE_O_TRACEEXIT and TRACEEXEC only, no fork tracing, so delegates run untraced) and, at the
 * exit stop — all work done, memory still mapped — reads VmHWM (and the current RssAnon and
 * RssFile: private memory vs pages of the executable) from /proc/<pid>/status and the
 * scheduler's account of the main thread from /proc/<pid>/schedstat: nanoseconds on a CPU and
 * nanoseconds runnable but waiting for one (how loaded the machine was), and its minor page faults
 * from /proc/<pid>/stat. Tracing costs a few
 * context switches, so timing runs leave --self off.
 *
 * usage: benchexec [--self] [--stdin FILE] [--stdout FILE] [--stderr FILE] -- COMMAND [ARG...]
 * prints {"wall_us":N,"exit":N,"signal":N,"vmhwm_kb":N,"cpu_us":N,"runq_us":N,"minflt":N,
 * "rss_anon_kb":N,"rss_file_kb":N,"wait4_maxrss_kb":N} on stdout; every field measured at the exit
 * stop is -1 without --self. Exit status: 0 when the command
 * ran (whatever its status), 2 on a usage error, 3 when benchexec itself failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
  fprintf(stderr, "benchexec: %s: %s\n", what, strerror(errno));
  exit(3);
}

static long long now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* A "Name:   N kB" field of /proc/<pid>/status in kB, or -1 when it cannot be read. */
static long read_status_kb(pid_t pid, const char *field) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  size_t len = strlen(field);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, field, len) == 0 && line[len] == ':') {
      kb = strtol(line + len + 1, NULL, 10);
      break;
    }
  }
  fclose(f);
  return kb;
}

/* On-CPU and run-queue nanoseconds of pid's main thread (/proc/<pid>/schedstat); -1 if unknown. */
static void read_schedstat(pid_t pid, long long *cpu_ns, long long *runq_ns) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
  *cpu_ns = *runq_ns = -1;
  FILE *f = fopen(path, "r");
  if (!f) return;
  if (fscanf(f, "%lld %lld", cpu_ns, runq_ns) != 2) *cpu_ns = *runq_ns = -1;
  fclose(f);
}

/* Minor page faults of pid so far (field 10 of /proc/<pid>/stat), or -1. */
static long read_minflt(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')'); /* the command name may contain spaces */
  long value = -1;
  /* after ") ": state ppid pgrp session tty_nr tpgid flags minflt */
  if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %ld", &value) != 1) value = -1;
  return value;
}

static void redirect(const char *file, int target, int flags) {
  if (!file) return;
  int fd = open(file, flags | O_CLOEXEC, 0600);
  if (fd < 0) die(file);
  if (dup2(fd, target) < 0) die("dup2");
  close(fd);
}

int main(int argc, char **argv) {
  int self = 0;
  const char *in = NULL, *out = NULL, *err = NULL;
  int i = 1;
  for (; i < argc; ++i) {
    if (strcmp(argv[i], "--") == 0) {
      ++i;
      break;
    } else if (strcmp(argv[i], "--self") == 0) {
      self = 1;
    } else if (strcmp(argv[i], "--stdin") == 0 && i + 1 < argc) {
      in = argv[++i];
    } else if (strcmp(argv[i], "--stdout") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (strcmp(argv[i], "--stderr") == 0 && i + 1 < argc) {
      err = argv[++i];
    } else {
      fprintf(stderr, "benchexec: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (i >= argc) {
    fprintf(stderr, "usage: benchexec [--self] [--stdin F] [--stdout F] [--stderr F] -- CMD [ARG...]\n");
    return 2;
  }
  fflush(stdout);
  long long start = now_us();
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    redirect(in ? in : "/dev/null", STDIN_FILENO, O_RDONLY);
    redirect(out, STDOUT_FILENO, O_WRONLY | O_CREAT | O_TRUNC);
    redirect(err, STDERR_FILENO, O_WRONLY | O_CREAT | O_TRUNC);
    if (self && ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) _exit(126);
    execvp(argv[i], argv + i);
    _exit(127);
  }
  long vmhwm = -1, rss_anon = -1, rss_file = -1;
  long long cpu_ns = -1, runq_ns = -1;
  long minflt = -1;
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  if (self) {
    /* First stop: the SIGTRAP after execve (or the child died before exec). */
    if (wait4(pid, &status, 0, &ru) < 0) die("wait4");
    if (WIFSTOPPED(status)) {
      if (ptrace(PTRACE_SETOPTIONS, pid, NULL,
                 (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)) != 0)
        die("ptrace(SETOPTIONS)");
      if (ptrace(PTRACE_CONT, pid, NULL, NULL) != 0) die("ptrace(CONT)");
      for (;;) {
        if (wait4(pid, &status, 0, &ru) < 0) die("wait4");
        if (WIFEXITED(status) || WIFSIGNALED(status)) break;
        if (!WIFSTOPPED(status)) continue;
        int sig = WSTOPSIG(status);
        int deliver = 0;
        if (sig == SIGTRAP && (status >> 16) == PTRACE_EVENT_EXIT) {
          vmhwm = read_status_kb(pid, "VmHWM");
          rss_anon = read_status_kb(pid, "RssAnon");
          rss_file = read_status_kb(pid, "RssFile");
          read_schedstat(pid, &cpu_ns, &runq_ns);
          minflt = read_minflt(pid);
        } else if (sig == SIGTRAP && (status >> 16) == PTRACE_EVENT_EXEC) {
          /* a further execve of the command (a wrapper script): nothing to deliver */
        } else {
          deliver = sig; /* an ordinary signal: pass it on */
        }
        if (ptrace(PTRACE_CONT, pid, NULL, (void *)(long)deliver) != 0 && errno != ESRCH)
          die("ptrace(CONT)");
      }
    }
  } else {
    if (wait4(pid, &status, 0, &ru) < 0) die("wait4");
  }
  long long wall = now_us() - start;
  printf("{\"wall_us\":%lld,\"exit\":%d,\"signal\":%d,\"vmhwm_kb\":%ld,\"cpu_us\":%lld,\"runq_us\":%lld,"
         "\"minflt\":%ld,\"rss_anon_kb\":%ld,\"rss_file_kb\":%ld,\"wait4_maxrss_kb\":%ld}\n",
         wall, WIFEXITED(status) ? WEXITSTATUS(status) : -1, WIFSIGNALED(status) ? WTERMSIG(status) : 0, vmhwm,
         cpu_ns < 0 ? -1 : cpu_ns / 1000, runq_ns < 0 ? -1 : runq_ns / 1000, minflt, rss_anon, rss_file,
         ru.ru_maxrss);
  return 0;
}
