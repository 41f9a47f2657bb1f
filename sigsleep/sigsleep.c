/*
 * sigsleep: a dummy job that "computes" for exactly --runtime seconds of
 * running time, excluding any time during which it was suspended (SIGTSTP,
 * SIGSTOP ... SIGCONT), then appends one JSON record of what happened to a
 * shared log.  See README.md for the interface and for how suspensions are
 * measured; the short version:
 *
 *  - All signals we care about are blocked, except while we wait in a raw
 *    ppoll(2) that atomically unblocks them.  Handlers therefore run only
 *    inside that wait, so the main loop never races with them.
 *  - The raw ppoll syscall writes back the remaining timeout at the moment it
 *    was interrupted.  A SIGSTOP interrupts the wait before the process stops,
 *    so after the SIGCONT we know to the microsecond when the stop began,
 *    although SIGSTOP itself can never be caught.
 *  - SIGTSTP is caught: the handler notes the time, stops the process itself
 *    with SIGSTOP (the default action a real job would get) and, once
 *    continued, notes the resume time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "vclock.h"

#define SIGSLEEP_VERSION "1.0"
#define RECORD_FORMAT 1

#define NS_PER_S 1000000000LL
/* Longest accepted duration: ~31 years, far beyond any trace, and it still
 * fits comfortably in int64 nanoseconds. */
#define MAX_DURATION_S 1e9
/* Longest launch (virtual seconds) that --from-slurm-start leaves out: more is not a
 * launch (a clock page of another run, a requeued job's stale variable). */
#define MAX_LAUNCH_S 60.0
/* Accepted epoch timestamps: up to the year 5138; rejects typos like 1e15. */
#define MAX_EPOCH_S 1e11
/* Largest exact integer in a double: job ids above it would be corrupted by
 * JSON readers that parse numbers as doubles. */
#define MAX_JOB_ID 9007199254740991ULL
#define MAX_META 64
#define MAX_META_KEY 64
#define MAX_META_VALUE 4096
/* A wait that returned within EPS of being entered did not really sleep:
 * the stop (if any) happened before we entered it.  See account_cont(). */
#define EPS_NS 1000000LL
/* Suspensions shorter than this are stray SIGCONTs (e.g. scancel sends
 * SIGCONT before SIGTERM), not suspensions: not recorded. */
#define MIN_SUSPENSION_NS 1000000LL
/* Longest wait for the log lock.  Holders keep it for one write (microseconds),
 * so this only matters when a holder is stuck; below Slurm's KillWait. */
#define LOCK_WAIT_US 1000000L

/* Phases (--phases): at most this many, channel names this long. */
#define MAX_PHASES 256
#define MAX_CHANNEL 31
/* A transfer re-reads its rate this often (running time), and this often while
 * the contention service has not published it yet. */
#define RATE_TICK_NS 100000000LL
#define RATE_WAIT_NS 20000000LL
/* A transfer or a phase with less than this left is done: the event clock stops at its
 * published end, written to the microsecond. */
#define DONE_NS 100000LL
#define DEFAULT_IO_DIR "/shared/io"

enum reason { R_COMPLETED, R_TIMEOUT, R_KILLED, R_CUT };
static const char *const REASON_NAME[] = {"completed", "timeout", "killed", "cut"};

struct meta {
    const char *key;
    size_t key_len;
    const char *value;
};

enum phase_kind { PH_COMPUTE, PH_IO, PH_CHECKPOINT };
static const char *const PHASE_NAME[] = {"compute", "io", "checkpoint"};

struct phase {
    enum phase_kind kind;
    char channel[MAX_CHANNEL + 1];
    double seconds; /* compute: running time */
    double mb;      /* transfer: megabytes (1e6 bytes) */
    /* outcome */
    bool started, done;
    double start_real, end_real;
    int64_t running_ns; /* running time spent in the phase (suspensions excluded) */
    double moved_mb;
    double min_mbps;
    bool draining; /* checkpoint handed over to the service as a drain */
};

struct options {
    double runtime_s;
    int64_t runtime_ns;
    bool has_walltime;
    double walltime_s;
    int64_t walltime_ns;
    unsigned long long job_id;
    bool has_job_id;
    const char *log_path;
    const char *started_path; /* --started, NULL without */
    bool from_slurm_start;    /* --from-slurm-start */
    bool has_submit_intended, has_submit_actual, has_end_of_trace;
    double submit_intended, submit_actual, end_of_trace;
    struct meta meta[MAX_META];
    int n_meta;
    bool has_runtime;
    struct phase *phases; /* --phases, NULL without */
    int n_phases;
    const char *io_dir;
    double time_scale;
};

struct interval {
    int64_t start_mono, end_mono; /* CLOCK_MONOTONIC ns */
    double start_real, end_real;  /* epoch seconds */
};

struct run {
    int64_t start_mono, end_mono;
    double start_real, end_real;
    int64_t suspended_ns;
    struct interval *iv;
    size_t n_iv, cap_iv;
    size_t n_unrecorded;   /* intervals counted but not stored (out of memory) */
    int64_t known_running; /* last instant we know we were not stopped */
    int64_t eot_mono;      /* end of trace on the monotonic clock, or INT64_MAX */
    int64_t goal_ns;       /* running time at which the current wait is over */
    bool has_launched;     /* counted from Slurm's start: start_real is Slurm's, launched_real ours */
    double launched_real;
    enum reason reason;
    int signo;
    bool poll_return; /* return after any wait a signal did not end (the event clock's looks) */
};

/* ---------------------------------------------------------------- clocks -- */

/* With --clock, every time of the job is the emulation's virtual clock (vclock.h):
 * "monotonic" instants are virtual nanoseconds and wall-clock instants virtual epoch
 * seconds, so a second of running time is a virtual second however fast the clock goes. */
static const struct vclock_page *g_clock;

static double true_real_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t mono_ns(void)
{
    if (g_clock)
        return llround(vclock_at(vclock_read(g_clock), true_real_s()) * 1e9);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static double real_s(void)
{
    return g_clock ? vclock_at(vclock_read(g_clock), true_real_s()) : true_real_s();
}

/* Wall-clock time of a past monotonic instant, via the current offset between
 * the two clocks (reading CLOCK_REALTIME at that instant was not possible). */
static double mono_to_real(int64_t mono)
{
    if (g_clock)
        return (double)mono / 1e9; /* the same virtual clock */
    int64_t now_m = mono_ns();
    double now_r = real_s();
    return now_r - (double)(now_m - mono) / 1e9;
}

/* The real nanoseconds to wait for `virtual_ns` of the clock; never longer than the
 * page's poll_s, so that a clock that jumps or changes its rate is read again soon. */
static int64_t real_wait_ns(int64_t virtual_ns)
{
    if (!g_clock || virtual_ns <= 0)
        return virtual_ns;
    struct vclock_reading c = vclock_read(g_clock);
    double longest = c.poll_s > 0 ? c.poll_s * 1e9 : 1e8;
    double wait = c.rate > 0 ? (double)virtual_ns / c.rate : longest;
    return (int64_t)(wait < longest ? wait : longest);
}

/* Virtual nanoseconds of `real_ns` of waiting at the clock's present rate. */
static int64_t virtual_of_real(int64_t real_ns)
{
    return g_clock ? llround((double)real_ns * vclock_read(g_clock).rate) : real_ns;
}


static struct timespec ns_to_ts(int64_t ns)
{
    struct timespec ts = {.tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S};
    return ts;
}

/* ----------------------------------------------------------- usage errors -- */

static const char USAGE_LINE[] =
    "usage: sigsleep --runtime SECONDS --job-id N --log FILE [--walltime SECONDS]"
    " [--submit-intended EPOCH] [--submit-actual EPOCH] [--end-of-trace EPOCH]"
    " [--meta KEY=VALUE]... (or --phases LIST [--io-dir DIR] [--time-scale X] instead of --runtime)";

/* Every bad invocation ends here: one line on stderr, exit status 2. */
__attribute__((noreturn, format(printf, 1, 2))) static void usage_error(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "sigsleep: %s; %s\n", msg, USAGE_LINE);
    exit(2);
}

static void print_help(void)
{
    printf("%s\n\n"
           "Sleep for SECONDS of running time, not counting time spent suspended\n"
           "(SIGTSTP/SIGSTOP until SIGCONT), then append one JSON line to FILE.\n\n"
           "  --runtime SECONDS        running time to emulate (>= 0)\n"
           "  --job-id N               the job's id in the trace (integer >= 0)\n"
           "  --log FILE               shared JSON-lines log, appended under an fcntl lock\n"
           "  --walltime SECONDS       stop at this much running time, reason 'timeout' (> 0)\n"
           "  --submit-intended EPOCH  when the replay meant to submit the job (recorded)\n"
           "  --submit-actual EPOCH    when it was really submitted (recorded)\n"
           "  --end-of-trace EPOCH     wall-clock cut-off: stop there, reason 'cut'\n"
           "  --meta KEY=VALUE         extra pair copied into the record (repeatable)\n"
           "  --phases LIST            instead of --runtime: comma-separated compute:SECONDS,\n"
           "                           checkpoint:MB, io:CHANNEL:MB; transfers move at the rate\n"
           "                           the contention service publishes in DIR/rates\n"
           "  --io-dir DIR             the contention service's directory (default " DEFAULT_IO_DIR ")\n"
           "  --time-scale X           bytes of X plan seconds per real second (>= 1, default 1)\n"
           "  --clock FILE             run on the emulation's virtual clock (a page written by\n"
           "                           harness/model/clock.py): every time and wait is virtual\n"
           "  --from-slurm-start       on a running --clock, count a --runtime job from Slurm's start\n"
           "                           (SLURM_JOB_START_TIME) instead of its own launch\n"
           "  --started FILE           append {\"job_id\":N,\"start\":EPOCH} to FILE once the job has\n"
           "                           read its start (what an event-driven clock waits for)\n"
           "  --help, --version\n\n"
           "Exit status: 0 completed or cut, 124 timeout, 128+N killed by signal N,\n"
           "1 log not writable, 2 bad arguments.\n",
           USAGE_LINE);
}

/* -------------------------------------------------------- argument parsing -- */

static void open_clock(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        usage_error("--clock: cannot open '%s': %s", path, strerror(errno));
    void *page = mmap(NULL, VCLOCK_SIZE, PROT_READ, MAP_SHARED, fd, 0);
    struct stat st;
    bool sized = fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(struct vclock_page);
    close(fd);
    if (page == MAP_FAILED || !sized || ((const struct vclock_page *)page)->magic != VCLOCK_MAGIC)
        usage_error("--clock: '%s' is not a virtual clock page (harness/model/clock.py)", path);
    g_clock = page;
}


/* Plain decimal only: strtod alone would also take "nan", "inf", hex floats
 * and leading blanks, none of which belong in a job description. */
static bool is_decimal(const char *s)
{
    const char *p = s;
    bool digits = false;
    if (*p == '+' || *p == '-')
        p++;
    for (; *p >= '0' && *p <= '9'; p++)
        digits = true;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            digits = true;
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

static double parse_number(const char *opt, const char *arg, double min, double max, bool min_inclusive)
{
    if (!is_decimal(arg))
        usage_error("--%s: '%s' is not a decimal number", opt, arg);
    errno = 0;
    double v = strtod(arg, NULL);
    if (errno == ERANGE || !isfinite(v))
        usage_error("--%s: '%s' is out of range", opt, arg);
    if (v > max)
        usage_error("--%s: '%s' is too large (at most %.0f)", opt, arg, max);
    if (v < min || (!min_inclusive && v == min))
        usage_error("--%s: '%s' must be %s %g", opt, arg, min_inclusive ? "at least" : "greater than", min);
    return v;
}

static unsigned long long parse_job_id(const char *arg)
{
    size_t n = strlen(arg);
    if (n == 0 || strspn(arg, "0123456789") != n)
        usage_error("--job-id: '%s' is not a non-negative integer", arg);
    errno = 0;
    unsigned long long v = strtoull(arg, NULL, 10);
    if (errno == ERANGE || v > MAX_JOB_ID)
        usage_error("--job-id: '%s' is too large (at most %llu)", arg, MAX_JOB_ID);
    return v;
}

/* Number of bytes of the valid UTF-8 sequence at s (at most n), 0 if invalid.
 * Strict: no overlongs, no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    size_t len = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    if (len == 0 || len > n || s[0] > 0xF4)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] > 0x9F) || (s[0] == 0xF0 && s[1] < 0x90) ||
        (s[0] == 0xF4 && s[1] > 0x8F))
        return 0;
    return len;
}

static bool valid_utf8(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len((const unsigned char *)s + i, n - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

static void parse_meta(struct options *o, const char *arg)
{
    const char *eq = strchr(arg, '=');
    size_t key_len = eq ? (size_t)(eq - arg) : 0;
    if (!eq || key_len == 0)
        usage_error("--meta: '%s' is not KEY=VALUE", arg);
    if (key_len > MAX_META_KEY || strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") < key_len)
        usage_error("--meta: key of '%s' must be 1-%d characters of [A-Za-z0-9_.-]", arg, MAX_META_KEY);
    if (strlen(eq + 1) > MAX_META_VALUE || !valid_utf8(eq + 1))
        usage_error("--meta: value of key '%.*s' must be valid UTF-8 of at most %d bytes", (int)key_len, arg,
                    MAX_META_VALUE);
    if (o->n_meta == MAX_META)
        usage_error("--meta: at most %d pairs", MAX_META);
    for (int i = 0; i < o->n_meta; i++)
        if (o->meta[i].key_len == key_len && memcmp(o->meta[i].key, arg, key_len) == 0)
            usage_error("--meta: key '%.*s' given twice", (int)key_len, arg);
    o->meta[o->n_meta++] = (struct meta){.key = arg, .key_len = key_len, .value = eq + 1};
}

enum { OPT_RUNTIME = 1000, OPT_JOB_ID, OPT_LOG, OPT_WALLTIME, OPT_SUBMIT_INTENDED, OPT_SUBMIT_ACTUAL,
       OPT_END_OF_TRACE, OPT_META, OPT_PHASES, OPT_IO_DIR, OPT_TIME_SCALE, OPT_CLOCK, OPT_STARTED,
       OPT_FROM_SLURM_START, OPT_HELP,
       OPT_VERSION };

/* One phase of --phases: compute:SECONDS, checkpoint:MB or io:CHANNEL:MB. */
static void parse_phase(struct phase *ph, char *text, int number)
{
    char *kind = text, *rest = strchr(text, ':');
    if (!rest)
        usage_error("--phases: phase %d '%s' is not KIND:VALUE", number, text);
    *rest++ = '\0';
    const char *value = rest;
    memset(ph, 0, sizeof *ph);
    if (strcmp(kind, "compute") == 0) {
        ph->kind = PH_COMPUTE;
        ph->seconds = parse_number("phases", value, 0, MAX_DURATION_S, true);
        return;
    }
    if (strcmp(kind, "checkpoint") == 0) {
        ph->kind = PH_CHECKPOINT;
        strcpy(ph->channel, "checkpoint");
    } else if (strcmp(kind, "io") == 0) {
        char *colon = strchr(rest, ':');
        size_t len = colon ? (size_t)(colon - rest) : 0;
        if (!colon || len == 0 || len > MAX_CHANNEL ||
            strspn(rest, "abcdefghijklmnopqrstuvwxyz0123456789_-") < len)
            usage_error("--phases: phase %d: io needs CHANNEL:MB, CHANNEL 1-%d of [a-z0-9_-]", number,
                        MAX_CHANNEL);
        ph->kind = PH_IO;
        memcpy(ph->channel, rest, len);
        value = colon + 1;
    } else {
        usage_error("--phases: phase %d: unknown kind '%s' (compute, checkpoint, io)", number, kind);
    }
    ph->mb = parse_number("phases", value, 0, 1e12, true);
}

static void parse_phases(struct options *o, const char *arg)
{
    static struct phase phases[MAX_PHASES];
    static char copy[16384];
    if (strlen(arg) >= sizeof copy)
        usage_error("--phases: list too long (at most %zu characters)", sizeof copy - 1);
    strcpy(copy, arg);
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == MAX_PHASES)
            usage_error("--phases: at most %d phases", MAX_PHASES);
        parse_phase(&phases[n], tok, n + 1);
        n++;
    }
    if (n == 0)
        usage_error("--phases: empty list");
    o->phases = phases;
    o->n_phases = n;
}

static const struct option LONG_OPTS[] = {
    {"runtime", required_argument, NULL, OPT_RUNTIME},
    {"job-id", required_argument, NULL, OPT_JOB_ID},
    {"log", required_argument, NULL, OPT_LOG},
    {"walltime", required_argument, NULL, OPT_WALLTIME},
    {"submit-intended", required_argument, NULL, OPT_SUBMIT_INTENDED},
    {"submit-actual", required_argument, NULL, OPT_SUBMIT_ACTUAL},
    {"end-of-trace", required_argument, NULL, OPT_END_OF_TRACE},
    {"meta", required_argument, NULL, OPT_META},
    {"phases", required_argument, NULL, OPT_PHASES},
    {"io-dir", required_argument, NULL, OPT_IO_DIR},
    {"time-scale", required_argument, NULL, OPT_TIME_SCALE},
    {"clock", required_argument, NULL, OPT_CLOCK},
    {"started", required_argument, NULL, OPT_STARTED},
    {"from-slurm-start", no_argument, NULL, OPT_FROM_SLURM_START},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* A scalar option given twice is almost certainly a generator bug: refuse
 * rather than silently keep one of the values. */
static void once(bool *seen, const char *name)
{
    if (*seen)
        usage_error("--%s given more than once", name);
    *seen = true;
}

static void apply_option(struct options *o, int c, const char *arg, bool seen[])
{
    const char *name = LONG_OPTS[c - OPT_RUNTIME].name;
    if (c != OPT_META)
        once(&seen[c - OPT_RUNTIME], name);
    switch (c) {
    case OPT_RUNTIME:
        o->runtime_s = parse_number(name, arg, 0, MAX_DURATION_S, true);
        o->runtime_ns = llround(o->runtime_s * 1e9);
        o->has_runtime = true;
        break;
    case OPT_PHASES:
        parse_phases(o, arg);
        break;
    case OPT_IO_DIR:
        if (arg[0] == '\0')
            usage_error("--io-dir: empty directory name");
        o->io_dir = arg;
        break;
    case OPT_TIME_SCALE:
        o->time_scale = parse_number(name, arg, 1, 1e9, true);
        break;
    case OPT_CLOCK:
        open_clock(arg);
        break;
    case OPT_JOB_ID:
        o->job_id = parse_job_id(arg);
        o->has_job_id = true;
        break;
    case OPT_LOG:
        if (arg[0] == '\0')
            usage_error("--log: empty file name");
        o->log_path = arg;
        break;
    case OPT_STARTED:
        if (arg[0] == '\0')
            usage_error("--started: empty file name");
        o->started_path = arg;
        break;
    case OPT_FROM_SLURM_START:
        o->from_slurm_start = true;
        break;
    case OPT_WALLTIME:
        o->walltime_s = parse_number(name, arg, 0, MAX_DURATION_S, false);
        o->walltime_ns = llround(o->walltime_s * 1e9);
        o->has_walltime = true;
        break;
    case OPT_SUBMIT_INTENDED:
        o->submit_intended = parse_number(name, arg, 0, MAX_EPOCH_S, true);
        o->has_submit_intended = true;
        break;
    case OPT_SUBMIT_ACTUAL:
        o->submit_actual = parse_number(name, arg, 0, MAX_EPOCH_S, true);
        o->has_submit_actual = true;
        break;
    case OPT_END_OF_TRACE:
        o->end_of_trace = parse_number(name, arg, 0, MAX_EPOCH_S, true);
        o->has_end_of_trace = true;
        break;
    case OPT_META:
        parse_meta(o, arg);
        break;
    }
}

static void parse_args(int argc, char **argv, struct options *o)
{
    bool seen[OPT_VERSION - OPT_RUNTIME + 1] = {false};
    int c;
    opterr = 0; /* getopt's own messages are not one-line usage errors */
    while ((c = getopt_long(argc, argv, ":", LONG_OPTS, NULL)) != -1) {
        if (c == OPT_HELP) {
            print_help();
            exit(0);
        } else if (c == OPT_VERSION) {
            printf("sigsleep %s\n", SIGSLEEP_VERSION);
            exit(0);
        } else if (c == ':') {
            usage_error("%s needs a value", argv[optind - 1]);
        } else if (c == '?') {
            usage_error("unknown option '%s'", argv[optind - 1]);
        } else {
            apply_option(o, c, optarg, seen);
        }
    }
    if (optind < argc)
        usage_error("unexpected argument '%s'", argv[optind]);
    if (o->has_runtime == (o->phases != NULL))
        usage_error(o->has_runtime ? "--runtime and --phases exclude each other" : "--runtime is required");
    if (!o->phases && (o->io_dir || o->time_scale > 0))
        usage_error("--io-dir and --time-scale only go with --phases");
    if (!o->io_dir)
        o->io_dir = DEFAULT_IO_DIR;
    if (o->time_scale == 0)
        o->time_scale = 1;
    if (!o->has_job_id)
        usage_error("--job-id is required");
    if (!o->log_path)
        usage_error("--log is required");
    if (o->from_slurm_start && !g_clock)
        usage_error("--from-slurm-start needs --clock (Slurm's start is whole seconds of the clock)");
}

/* ----------------------------------------------------------------- signals -- */

/*
 * Handler state.  Handlers run only inside ppoll() (everything is blocked
 * elsewhere) and never nest (sa_mask blocks all of them), so the main loop
 * reads these only while no handler can run: plain volatile is enough.
 */
static volatile sig_atomic_t g_term_signo;
static volatile sig_atomic_t g_cont_seen;
static volatile int64_t g_cont_mono;
static volatile sig_atomic_t g_tstp_seen;
static volatile int64_t g_tstp_start, g_tstp_end;

static const int TERM_SIGNALS[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};

static const char *signal_name(int signo)
{
    switch (signo) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return "?";
    }
}

static void on_term(int signo)
{
    if (!g_term_signo)
        g_term_signo = signo;
}

static void on_cont(int signo)
{
    (void)signo;
    g_cont_mono = mono_ns();
    g_cont_seen = 1;
}

/*
 * SIGTSTP is what Slurm sends first (then SIGSTOP two seconds later).  Catching
 * it gives the exact start of the suspension; we then stop ourselves, as the
 * default action would, and note when SIGCONT let us go.  If a SIGCONT is
 * already pending, the suspension was over before this handler got to run:
 * stopping now would hang the job until a SIGCONT that never comes.
 */
static void on_tstp(int signo)
{
    (void)signo;
    sigset_t pending;
    int64_t start = mono_ns();
    sigpending(&pending);
    if (!sigismember(&pending, SIGCONT))
        kill(getpid(), SIGSTOP);
    g_tstp_start = start;
    g_tstp_end = mono_ns();
    g_tstp_seen = 1;
}

static void handled_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof TERM_SIGNALS / sizeof TERM_SIGNALS[0]; i++)
        sigaddset(set, TERM_SIGNALS[i]);
    sigaddset(set, SIGCONT);
    sigaddset(set, SIGTSTP);
}

static void install(int signo, void (*fn)(int), const sigset_t *mask)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sa.sa_mask = *mask;
    sa.sa_flags = 0; /* no SA_RESTART: the wait must return so we can account */
    sigaction(signo, &sa, NULL);
}

/* Block every handled signal and install the handlers.  *wait_mask receives
 * the mask to use inside ppoll (the original one, with them unblocked). */
static void setup_signals(sigset_t *wait_mask)
{
    sigset_t handled, old;
    handled_set(&handled);
    sigprocmask(SIG_BLOCK, &handled, &old);
    *wait_mask = old;
    for (int s = 1; s < NSIG; s++)
        if (sigismember(&handled, s))
            sigdelset(wait_mask, s);
    for (size_t i = 0; i < sizeof TERM_SIGNALS / sizeof TERM_SIGNALS[0]; i++)
        install(TERM_SIGNALS[i], on_term, &handled);
    install(SIGCONT, on_cont, &handled);
    install(SIGTSTP, on_tstp, &handled);
}

/*
 * Wait up to *ts with *mask in force.  The raw syscall is used on purpose:
 * the kernel writes the remaining time back into *ts when a signal interrupts
 * the wait, computed at the moment of interruption (for SIGSTOP: before the
 * process stops).  glibc's ppoll() wrapper hides that write-back.
 */
static long wait_ppoll(struct timespec *ts, const sigset_t *mask)
{
    return syscall(SYS_ppoll, NULL, 0, ts, mask, (size_t)(_NSIG / 8));
}

/* --------------------------------------------------------------- accounting -- */

static void store_interval(struct run *r, int64_t start, int64_t end)
{
    if (r->n_iv == r->cap_iv) {
        size_t cap = r->cap_iv ? 2 * r->cap_iv : 8;
        struct interval *iv = realloc(r->iv, cap * sizeof *iv);
        if (!iv) {
            r->n_unrecorded++; /* still counted in suspended_ns */
            return;
        }
        r->iv = iv;
        r->cap_iv = cap;
    }
    r->iv[r->n_iv++] = (struct interval){start, end, mono_to_real(start), mono_to_real(end)};
}

/* Count [start, end] as suspended.  A piece that touches the previous
 * interval extends it (SIGTSTP's self-stop is followed by its SIGCONT being
 * delivered a moment later); a short isolated one is a stray SIGCONT. */
static void add_suspension(struct run *r, int64_t start, int64_t end)
{
    if (start < r->known_running)
        start = r->known_running; /* never count a moment twice */
    if (end <= start)
        return;
    struct interval *last = r->n_iv ? &r->iv[r->n_iv - 1] : NULL;
    if (last && start - last->end_mono < MIN_SUSPENSION_NS) {
        r->suspended_ns += end - last->end_mono;
        last->end_mono = end;
        last->end_real = mono_to_real(end);
    } else if (end - start >= MIN_SUSPENSION_NS) {
        r->suspended_ns += end - start;
        store_interval(r, start, end);
    } else {
        return;
    }
    r->known_running = end;
}

/*
 * A SIGCONT ended a stop we could not see begin (a bare SIGSTOP).  If this
 * wait really slept, the SIGSTOP is what interrupted it, at `woke`.  If it
 * returned at once, SIGCONT was already pending on entry: the stop hit while
 * we were between waits, so it began after the last instant we know we were
 * running (the previous wake-up).  Worst-case error: EPS plus the few
 * microseconds spent between waits.
 */
static void account_cont(struct run *r, int64_t slept, int64_t woke)
{
    int64_t start = slept > EPS_NS ? woke : r->known_running;
    add_suspension(r, start, g_cont_mono);
}

static void account_signals(struct run *r, int64_t slept, int64_t woke)
{
    if (g_tstp_seen) {
        add_suspension(r, g_tstp_start, g_tstp_end);
        g_tstp_seen = 0;
    }
    if (g_cont_seen) {
        account_cont(r, slept, woke);
        g_cont_seen = 0;
    }
}

static int64_t running_ns(const struct run *r, int64_t now)
{
    return now - r->start_mono - r->suspended_ns;
}

/* Time until the first limit: runtime, walltime (both running time, like
 * Slurm's time limit, which does not run while suspended), end of trace
 * (wall clock, suspension does not postpone it). */
static int64_t time_to_limit(const struct options *o, const struct run *r, int64_t now)
{
    int64_t run = running_ns(r, now);
    int64_t left = r->goal_ns - run;
    if (o->has_walltime && o->walltime_ns - run < left)
        left = o->walltime_ns - run;
    if (r->eot_mono - now < left)
        left = r->eot_mono - now;
    return left > 0 ? left : 0;
}

/*
 * ppoll's timer may fire late by 0.1% of the timeout (0.5% if niced), up to
 * 100 ms.  Sleeping to 1/128 short of the limit and repeating keeps every wake
 * before the limit; the last step is too short to matter.  A few wake-ups per
 * job, whatever its length.
 */
static int64_t slice(int64_t left)
{
    return left > 2 * EPS_NS ? left - left / 128 : left;
}

static enum reason why_stopped(const struct options *o, const struct run *r, int64_t now)
{
    int64_t run = running_ns(r, now);
    if (run >= r->goal_ns)
        return R_COMPLETED;
    if (o->has_walltime && run >= o->walltime_ns)
        return R_TIMEOUT;
    return R_CUT;
}

/* Deliver signals already pending (a SIGCONT of a stop just before the end
 * or before SIGTERM) without waiting, so the record includes that stop.
 * SIGTSTP stays blocked: stopping now would only delay the record. */
static void drain_pending(struct run *r, const sigset_t *wait_mask)
{
    sigset_t mask = *wait_mask;
    sigaddset(&mask, SIGTSTP);
    for (int i = 0; i < 16; i++) {
        struct timespec ts = {0, 0};
        int64_t a = mono_ns();
        long rc = wait_ppoll(&ts, &mask);
        account_signals(r, 0, a);
        if (rc == 0)
            break;
    }
}

static void run_job(const struct options *o, struct run *r, const sigset_t *wait_mask)
{
    for (;;) {
        int64_t a = mono_ns();
        int64_t req = slice(time_to_limit(o, r, a));
        int64_t req_real = real_wait_ns(req);
        struct timespec ts = ns_to_ts(req_real);
        long rc = wait_ppoll(&ts, wait_mask);
        int64_t slept = virtual_of_real(req_real - ((int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec));
        int64_t woke = a + slept;
        if (rc < 0 && errno != EINTR) {
            /* Only on a kernel or sandbox without ppoll: better loud than a busy loop. */
            fprintf(stderr, "sigsleep: ppoll failed: %s\n", strerror(errno));
            exit(1);
        }
        if (rc < 0)
            account_signals(r, slept, woke);
        if (woke > r->known_running)
            r->known_running = woke;
        if (g_term_signo) {
            r->reason = R_KILLED;
            r->signo = g_term_signo;
            drain_pending(r, wait_mask);
            return;
        }
        if (rc == 0 && req == 0) {
            r->reason = why_stopped(o, r, mono_ns());
            return;
        }
        if (rc == 0 && r->poll_return)
            return;
    }
}

/* ------------------------------------------------------- the event clock -- */

/*
 * On a held virtual clock (rate 0: harness run --clock events) the clock jumps only when
 * the cluster is quiet, and never past the first end of a transfer or a phase. So this
 * job publishes when its current phase ends, again whenever that end or its set changes:
 * DIR/ends/job.<ID>, one line "at=V sig=S end=E final=0|1" (S: the set its rate was
 * solved for, "-" for a compute phase; E "inf" while its rate is not known; final: the
 * job's last phase). harness/emulation/iolive/io_events.py reads it.
 */
static bool on_event_clock(void)
{
    return g_clock && vclock_read(g_clock).rate == 0;
}

static void ends_path(char *out, size_t n, const struct options *o, const char *suffix)
{
    snprintf(out, n, "%s/ends/job.%llu%s", o->io_dir, o->job_id, suffix);
}

static void publish_end(const struct options *o, const char *sig, double end, bool final)
{
    static char last[128];
    char what[128], line[160], dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 8];
    char end_text[32];
    if (isinf(end))
        snprintf(end_text, sizeof end_text, "inf");
    else
        snprintf(end_text, sizeof end_text, "%.6f", end);
    /* Written again for a new set, end or phase only: an end holds across a jump. */
    snprintf(what, sizeof what, "sig=%s end=%s final=%d\n", sig, end_text, final ? 1 : 0);
    if (strcmp(what, last) == 0)
        return;
    snprintf(line, sizeof line, "at=%.6f %s", real_s(), what);
    snprintf(dir, sizeof dir, "%s/ends", o->io_dir);
    mkdir(dir, 0777); /* EEXIST is fine; a failure shows at open */
    ends_path(path, sizeof path, o, "");
    ends_path(tmp, sizeof tmp, o, ".tmp");
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "sigsleep: cannot publish '%s': %s\n", tmp, strerror(errno));
        return;
    }
    fputs(line, f);
    if (fclose(f) == 0 && rename(tmp, path) == 0)
        snprintf(last, sizeof last, "%s", what);
}

static void withdraw_end(const struct options *o)
{
    char path[PATH_MAX];
    ends_path(path, sizeof path, o, "");
    unlink(path);
}

/* ------------------------------------------------------------------ phases -- */

/*
 * A transfer talks to the contention service through two kinds of files in
 * --io-dir (README.md, "Phases"): it registers flows/KEY.flow (one line:
 * job, phase, channel, MB, time scale, nodes; written to a temporary name and
 * renamed, so the service never reads half of it) and reads its current rate
 * in MB/s from the line "KEY RATE" of the file rates, which the service
 * rewrites atomically whenever the set of flows changes.
 */
static void flow_path(char *out, size_t n, const struct options *o, int index, const char *suffix)
{
    snprintf(out, n, "%s/flows/%llu.%d.flow%s", o->io_dir, o->job_id, index, suffix);
}

/* Write the phase's flow file (atomically: a temporary file renamed over it).
 * drain_start < 0: the transfer itself, moved by this process; otherwise the
 * checkpoint's drain (BB node -> PFS) from drain_start on, handed over to the
 * service, which moves it and keeps its state in the file (pid 0, at, rate). */
static bool write_flow(const struct options *o, int index, const struct phase *ph, double drain_start)
{
    char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 8];
    snprintf(dir, sizeof dir, "%s/flows", o->io_dir);
    mkdir(dir, 0777); /* EEXIST is fine; any other failure shows at open */
    flow_path(path, sizeof path, o, index, "");
    flow_path(tmp, sizeof tmp, o, index, ".tmp");
    const char *slurm = getenv("SLURM_JOB_ID"), *nodes = getenv("SLURM_JOB_NODELIST");
    bool drain = drain_start >= 0;
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "sigsleep: cannot register flow '%s': %s\n", tmp, strerror(errno));
        return false;
    }
    fprintf(f, "job=%llu slurm_job=%s phase=%d channel=%s mb=%.6f time_scale=%.9g pid=%ld nodes=%s",
            o->job_id, slurm && *slurm ? slurm : "-", index, drain ? "drain" : ph->channel, ph->mb,
            o->time_scale, drain ? 0L : (long)getpid(), nodes && *nodes ? nodes : "-");
    if (drain)
        fprintf(f, " start=%.6f at=%.6f rate=0 total=%.6f", drain_start, drain_start, ph->mb);
    fprintf(f, "\n");
    bool ok = fclose(f) == 0 && rename(tmp, path) == 0;
    if (!ok)
        fprintf(stderr, "sigsleep: cannot register flow '%s': %s\n", path, strerror(errno));
    return ok;
}

static bool register_flow(const struct options *o, int index, const struct phase *ph)
{
    return write_flow(o, index, ph, -1);
}

static void unregister_flow(const struct options *o, int index)
{
    char path[PATH_MAX];
    flow_path(path, sizeof path, o, index, "");
    unlink(path);
}

#define SIG_LEN 32
/* This flow's rate in MB/s from DIR/rates, or -1 if the service has not published it;
 * `sig` gets the signature of the set it was solved for (its "#sig" line, "?" without). */
static double read_rate(const struct options *o, int index, char sig[SIG_LEN])
{
    snprintf(sig, SIG_LEN, "?");
    static char buf[1 << 20];
    char path[PATH_MAX], key[64];
    snprintf(path, sizeof path, "%s/rates", o->io_dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    if (strncmp(buf, "#sig ", 5) == 0)
        sscanf(buf + 5, "%31s", sig);
    int klen = snprintf(key, sizeof key, "%llu.%d ", o->job_id, index);
    for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, key, (size_t)klen) == 0)
            return strtod(line + klen, NULL);
    return -1;
}

/* Wait until `goal` nanoseconds of running time (or a limit or a signal). */
static void run_to(const struct options *o, struct run *r, const sigset_t *wait_mask, int64_t goal)
{
    r->goal_ns = goal;
    run_job(o, r, wait_mask);
}

/* Move the phase's megabytes at the published rate, re-read every RATE_TICK_NS
 * of running time; the last published rate holds while the service is away. */
/* Whether `left` MB at `rate` MB/s is done: nothing left, or less than DONE_NS of it. */
static bool transfer_done(double left, double rate)
{
    return left <= 0 || (rate > 0 && left <= rate * DONE_NS / 1e9);
}

static void run_transfer(const struct options *o, struct run *r, const sigset_t *wait_mask, int index,
                         struct phase *ph)
{
    double left = ph->mb, rate = -1;
    char sig[SIG_LEN] = "?";
    bool registered = register_flow(o, index, ph), last_phase = index == o->n_phases - 1;
    ph->min_mbps = INFINITY;
    while (!transfer_done(left, rate)) {
        char read_sig[SIG_LEN];
        double published = registered ? read_rate(o, index, read_sig) : -1;
        if (published >= 0) {
            rate = published;
            snprintf(sig, sizeof sig, "%s", read_sig);
        }
        int64_t step = RATE_WAIT_NS;
        if (rate > 0) {
            double to_end = left / rate * 1e9;
            step = to_end < RATE_TICK_NS ? (int64_t)ceil(to_end) : RATE_TICK_NS;
            if (rate < ph->min_mbps)
                ph->min_mbps = rate;
        }
        r->poll_return = on_event_clock();
        if (r->poll_return) {
            double now = real_s();
            publish_end(o, sig, rate > 0 ? now + left / rate : INFINITY, last_phase);
            step = rate > 0 ? (int64_t)ceil(left / rate * 1e9) : RATE_WAIT_NS; /* the clock stops there */
        }
        int64_t before = running_ns(r, mono_ns());
        run_to(o, r, wait_mask, before + step);
        int64_t after = running_ns(r, mono_ns());
        if (rate > 0) {
            double moved = rate * (double)(after - before) / 1e9;
            left -= moved < left ? moved : left;
        }
        if (r->reason != R_COMPLETED)
            break;
    }
    r->poll_return = false;
    if (r->reason == R_COMPLETED && transfer_done(left, rate))
        left = 0; /* done to the microsecond the clock stopped at: the checkpoint drains */
    ph->moved_mb = ph->mb - left;
    /* A checkpoint done drains in the background (the flow file becomes the drain,
     * in one rename): the next phase goes on meanwhile. */
    if (registered && ph->kind == PH_CHECKPOINT && left <= 0 && ph->mb > 0)
        ph->draining = write_flow(o, index, ph, real_s());
    if (registered && !ph->draining)
        unregister_flow(o, index);
}

/* A compute phase: `seconds` of running time; on the event clock its end published (once:
 * publish_end writes only a new end). */
static void run_compute(const struct options *o, struct run *r, const sigset_t *wait_mask, int index,
                        int64_t goal)
{
    for (;;) {
        r->poll_return = on_event_clock();
        if (r->poll_return)
            publish_end(o, "-", real_s() + (double)(goal - running_ns(r, mono_ns())) / 1e9,
                        index == o->n_phases - 1);
        run_to(o, r, wait_mask, goal);
        if (r->reason != R_COMPLETED || running_ns(r, mono_ns()) >= goal - DONE_NS)
            break;
    }
    r->poll_return = false;
}

/* A job stopped by a limit or a signal loses its drains in flight (the
 * simulator's job killed at its walltime does). */
static void drop_drains(const struct options *o)
{
    for (int i = 0; i < o->n_phases; i++)
        if (o->phases[i].draining)
            unregister_flow(o, i);
}

static void run_phases(const struct options *o, struct run *r, const sigset_t *wait_mask)
{
    for (int i = 0; i < o->n_phases; i++) {
        struct phase *ph = &o->phases[i];
        int64_t begin = mono_ns(), run_begin = running_ns(r, begin);
        ph->started = true;
        ph->start_real = real_s();
        if (ph->kind == PH_COMPUTE)
            run_compute(o, r, wait_mask, i, run_begin + llround(ph->seconds * 1e9));
        else
            run_transfer(o, r, wait_mask, i, ph);
        ph->end_real = real_s();
        ph->running_ns = running_ns(r, mono_ns()) - run_begin;
        ph->done = r->reason == R_COMPLETED;
        if (!ph->done)
            return;
    }
}

/* ------------------------------------------------------------------ record -- */

struct buf {
    char *p;
    size_t len, cap;
    bool oom;
};

static void buf_reserve(struct buf *b, size_t more)
{
    if (b->oom || b->len + more < b->cap)
        return;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap <= b->len + more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return;
    }
    b->p = p;
    b->cap = cap;
}

__attribute__((format(printf, 2, 3))) static void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    buf_reserve(b, (size_t)n + 1);
    if (b->oom)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* JSON string (or null).  Invalid UTF-8 from the environment becomes U+FFFD
 * so that the line always parses. */
static void buf_json_str(struct buf *b, const char *s)
{
    if (!s) {
        buf_printf(b, "null");
        return;
    }
    size_t n = strlen(s);
    buf_printf(b, "\"");
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = utf8_len((const unsigned char *)s + i, n - i);
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            buf_printf(b, "\\u%04x", c);
        else if (k == 0)
            buf_printf(b, "\\ufffd");
        else
            buf_printf(b, "%.*s", (int)k, s + i);
        i += k ? k : 1;
    }
    buf_printf(b, "\"");
}

static void buf_json_opt_time(struct buf *b, const char *key, bool has, double v)
{
    if (has)
        buf_printf(b, ",\"%s\":%.6f", key, v);
    else
        buf_printf(b, ",\"%s\":null", key);
}

/* Environment value as a JSON integer if it is one (SLURM_JOB_ID), else null. */
static void buf_json_env_int(struct buf *b, const char *key, const char *name)
{
    const char *v = getenv(name);
    if (v && *v && strlen(v) <= 15 && strspn(v, "0123456789") == strlen(v))
        buf_printf(b, ",\"%s\":%s", key, v);
    else
        buf_printf(b, ",\"%s\":null", key);
}

static void build_identity(struct buf *b, const struct options *o)
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    buf_printf(b, "{\"format\":%d,\"job_id\":%llu", RECORD_FORMAT, o->job_id);
    buf_json_env_int(b, "slurm_job_id", "SLURM_JOB_ID");
    buf_printf(b, ",\"host\":");
    buf_json_str(b, host[0] ? host : NULL);
    buf_printf(b, ",\"node\":");
    buf_json_str(b, getenv("SLURMD_NODENAME"));
    buf_printf(b, ",\"nodelist\":");
    buf_json_str(b, getenv("SLURM_JOB_NODELIST"));
    buf_printf(b, ",\"pid\":%ld", (long)getpid());
}

static void build_request(struct buf *b, const struct options *o)
{
    buf_printf(b, ",\"runtime\":%.6f", o->runtime_ns / 1e9);
    if (o->has_walltime)
        buf_printf(b, ",\"walltime\":%.6f", o->walltime_ns / 1e9);
    else
        buf_printf(b, ",\"walltime\":null");
    buf_json_opt_time(b, "submit_intended", o->has_submit_intended, o->submit_intended);
    buf_json_opt_time(b, "submit_actual", o->has_submit_actual, o->submit_actual);
    buf_json_opt_time(b, "end_of_trace", o->has_end_of_trace, o->end_of_trace);
}

static void build_outcome(struct buf *b, const struct run *r)
{
    int64_t running = r->end_mono - r->start_mono - r->suspended_ns;
    buf_printf(b, ",\"start\":%.6f,\"end\":%.6f,\"running\":%.6f,\"suspended\":%.6f", r->start_real,
               r->end_real, running / 1e9, r->suspended_ns / 1e9);
    if (r->has_launched)
        buf_printf(b, ",\"launched\":%.6f", r->launched_real);
    buf_printf(b, ",\"n_suspensions\":%zu,\"suspensions\":[", r->n_iv + r->n_unrecorded);
    for (size_t i = 0; i < r->n_iv; i++)
        buf_printf(b, "%s[%.6f,%.6f]", i ? "," : "", r->iv[i].start_real, r->iv[i].end_real);
    buf_printf(b, "],\"reason\":\"%s\",\"signal\":", REASON_NAME[r->reason]);
    if (r->reason == R_KILLED) {
        buf_printf(b, "\"%s\"", signal_name(r->signo));
    } else {
        buf_printf(b, "null");
    }
}

static void build_phases(struct buf *b, const struct options *o)
{
    if (!o->phases)
        return;
    buf_printf(b, ",\"phases\":[");
    for (int i = 0; i < o->n_phases; i++) {
        const struct phase *ph = &o->phases[i];
        buf_printf(b, "%s{\"kind\":\"%s\",\"channel\":", i ? "," : "", PHASE_NAME[ph->kind]);
        buf_json_str(b, ph->kind == PH_COMPUTE ? NULL : ph->channel);
        if (ph->kind == PH_COMPUTE)
            buf_printf(b, ",\"seconds\":%.6f,\"mb\":null", ph->seconds);
        else
            buf_printf(b, ",\"seconds\":null,\"mb\":%.6f", ph->mb);
        if (!ph->started) {
            buf_printf(b, ",\"start\":null,\"end\":null,\"running\":null,\"done\":false}");
            continue;
        }
        double running = ph->running_ns / 1e9;
        buf_printf(b, ",\"start\":%.6f,\"end\":%.6f,\"running\":%.6f,\"done\":%s", ph->start_real,
                   ph->end_real, running, ph->done ? "true" : "false");
        if (ph->kind != PH_COMPUTE) {
            buf_printf(b, ",\"moved_mb\":%.6f,\"mean_mbps\":%.3f,\"min_mbps\":", ph->moved_mb,
                       running > 0 ? ph->moved_mb / running : 0.0);
            if (isfinite(ph->min_mbps))
                buf_printf(b, "%.3f", ph->min_mbps);
            else
                buf_printf(b, "null");
        }
        buf_printf(b, "}");
    }
    buf_printf(b, "]");
}

static void build_meta(struct buf *b, const struct options *o)
{
    buf_printf(b, ",\"meta\":{");
    for (int i = 0; i < o->n_meta; i++) {
        buf_printf(b, "%s\"%.*s\":", i ? "," : "", (int)o->meta[i].key_len, o->meta[i].key);
        buf_json_str(b, o->meta[i].value);
    }
    buf_printf(b, "}}\n");
}

static void on_alarm(int signo)
{
    (void)signo; /* only here to make F_SETLKW return EINTR */
}

/* Exclusive lock on the whole log, waiting at most LOCK_WAIT_US.  Unbounded
 * waiting would let one stuck holder (a job SIGSTOPped while writing, or a
 * stranger locking the file) hang every job that ends after it. */
static bool lock_log(int fd)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {.it_value = {.tv_sec = LOCK_WAIT_US / 1000000, .tv_usec = LOCK_WAIT_US % 1000000}};
    struct itimerval off = {0};
    setitimer(ITIMER_REAL, &it, NULL);
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    int rc = fcntl(fd, F_SETLKW, &lk);
    int err = errno;
    setitimer(ITIMER_REAL, &off, NULL);
    if (rc != 0)
        fprintf(stderr, "sigsleep: warning: cannot lock the log (%s), writing without the lock\n",
                err == EINTR ? "timed out" : strerror(err));
    return rc == 0;
}

/*
 * Append the line with one write(2) on an O_APPEND descriptor while holding an
 * exclusive fcntl lock on the whole file, so concurrent jobs never interleave
 * (also on file systems where O_APPEND alone is not atomic).  fsync comes after
 * the unlock: when hundreds of jobs end together (end of a run, KillWait of
 * 2 s before SIGKILL) they must not queue behind each other's disk flushes.
 */
static int append_record(int fd, const char *line, size_t len)
{
    bool locked = lock_log(fd);
    ssize_t n = write(fd, line, len);
    int err = errno;
    if (locked) {
        struct flock lk = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
        fcntl(fd, F_SETLK, &lk);
    }
    if (n != (ssize_t)len) {
        fprintf(stderr, "sigsleep: writing the log failed (%s)\n", n < 0 ? strerror(err) : "short write");
        return -1;
    }
    if (fsync(fd) != 0 && errno != EINVAL) /* EINVAL: e.g. /dev/null, nothing to flush */
        fprintf(stderr, "sigsleep: warning: fsync of the log failed (%s)\n", strerror(errno));
    return 0;
}

static int exit_status(const struct run *r)
{
    switch (r->reason) {
    case R_TIMEOUT:
        return 124; /* as timeout(1) */
    case R_KILLED:
        return 128 + r->signo; /* as a shell reports a death by signal */
    default:
        return 0;
    }
}

static int write_record(int fd, const struct options *o, const struct run *r)
{
    struct buf b = {0};
    build_identity(&b, o);
    build_request(&b, o);
    build_outcome(&b, r);
    build_phases(&b, o);
    build_meta(&b, o);
    if (b.oom) {
        fprintf(stderr, "sigsleep: out of memory building the record\n");
        return 1;
    }
    if (append_record(fd, b.p, b.len) != 0) {
        fputs(b.p, stderr); /* keep the record in the job's output at least */
        return 1;
    }
    free(b.p);
    return exit_status(r);
}

/* The start marker (--started): one line, under the same lock as the log.  A
 * clock that moves by events waits for it before it moves: a job must have read
 * its start on the clock Slurm started it on. */
static int write_started(const struct options *o, const struct run *r)
{
    char line[128];
    int len = snprintf(line, sizeof line, "{\"job_id\":%llu,\"start\":%.6f}\n", o->job_id, r->start_real);
    int fd = open(o->started_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0 || append_record(fd, line, (size_t)len) != 0) {
        fprintf(stderr, "sigsleep: cannot write the start marker to '%s'\n", o->started_path);
        if (fd >= 0)
            close(fd);
        return 1;
    }
    close(fd);
    return 0;
}

/*
 * At a fixed speed-up the launch (slurmd forks slurmstepd, which starts the batch script:
 * tens of real ms) takes seconds of virtual time, a delay the machine at x1 does not have.
 * Counting the job from Slurm's start (whole seconds, what sacct reports and what its time
 * limit counts from) leaves the launch out: the job ends where Slurm's start and its runtime
 * put it.  Not on a held clock (the launch takes no virtual time there, and the whole
 * second would shorten the job), not with --phases (a transfer cannot move before the job
 * runs), and not when Slurm's start is not a moment ago.  Never before the job's submission
 * (--submit-intended): Slurm stamps by the daemons' clock, up to a tick behind the page.
 */
static void count_from_slurm_start(const struct options *o, struct run *r)
{
    const char *text = getenv("SLURM_JOB_START_TIME");
    if (o->phases || !text || !is_decimal(text) || vclock_read(g_clock).rate <= 0)
        return;
    double slurm_start = strtod(text, NULL);
    if (o->has_submit_intended && slurm_start < o->submit_intended)
        slurm_start = o->submit_intended; /* the daemons' clock lags the page by up to a tick */
    double launch = r->start_real - slurm_start;
    if (!(launch >= 0 && launch <= MAX_LAUNCH_S))
        return;
    r->has_launched = true;
    r->launched_real = r->start_real;
    r->start_real = slurm_start;
    r->start_mono -= llround(launch * 1e9);
}

/* -------------------------------------------------------------------- main -- */

int main(int argc, char **argv)
{
    struct options o;
    memset(&o, 0, sizeof o);
    parse_args(argc, argv, &o);

    /* Open before running: a bad path fails now, not after hours of sleep. */
    int fd = open(o.log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        fprintf(stderr, "sigsleep: cannot open log '%s': %s\n", o.log_path, strerror(errno));
        return 1;
    }

    /* Likewise the contention service's directory, if a phase transfers. */
    for (int i = 0; i < o.n_phases; i++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/flows", o.io_dir);
        if (o.phases[i].kind == PH_COMPUTE)
            continue;
        if ((mkdir(dir, 0777) != 0 && errno != EEXIST) || access(dir, W_OK) != 0) {
            fprintf(stderr, "sigsleep: cannot register transfers in '%s': %s\n", dir, strerror(errno));
            return 1;
        }
        break;
    }

    sigset_t wait_mask;
    setup_signals(&wait_mask);

    struct run r;
    memset(&r, 0, sizeof r);
    r.start_mono = mono_ns();
    r.start_real = real_s();
    if (o.from_slurm_start)
        count_from_slurm_start(&o, &r);
    r.known_running = r.start_mono;
    r.eot_mono = INT64_MAX;
    if (o.started_path && write_started(&o, &r) != 0)
        return 1;
    if (o.has_end_of_trace) {
        double left_s = o.end_of_trace - r.start_real;
        /* Beyond any runtime the limit cannot bind; capping avoids int64 overflow. */
        r.eot_mono = left_s > 2 * MAX_DURATION_S ? INT64_MAX : r.start_mono + llround(left_s * 1e9);
    }

    if (o.phases) {
        run_phases(&o, &r, &wait_mask);
        withdraw_end(&o);
        if (r.reason != R_COMPLETED)
            drop_drains(&o);
        for (int i = 0; i < o.n_phases; i++)
            if (o.phases[i].kind == PH_COMPUTE)
                o.runtime_ns += llround(o.phases[i].seconds * 1e9);
    } else {
        r.goal_ns = o.runtime_ns;
        run_job(&o, &r, &wait_mask);
    }

    r.end_mono = mono_ns();
    r.end_real = real_s();
    int status = write_record(fd, &o, &r);
    close(fd);
    free(r.iv);
    return status;
}
