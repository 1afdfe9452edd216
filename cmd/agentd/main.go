package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	// The time zone database, embedded: a schedule may name any IANA zone,
	// and a minimal image (the distroless one) has none of its own.
	_ "time/tzdata"
)

// Exit codes of the process.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // the command line was wrong
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	report(os.Stderr, err)
	os.Exit(exitCode(err))
}

// run executes the agentd command line args (without the program name)
// with the process environment, writing results to stdout and messages to
// stderr. It returns a *usageError when args are wrong.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runEnv(ctx, args, os.Getenv, stdout, stderr)
}

// runEnv is run with the environment lookup injected, so tests need not
// change the process environment.
func runEnv(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv, stdout: &lockedWriter{w: stdout}, stderr: &lockedWriter{w: stderr}}
	return e.dispatch(ctx, args)
}

// env is what a command takes from its process: the environment and the
// output streams.
type env struct {
	getenv func(string) string
	stdout io.Writer // results: keys, tables
	stderr io.Writer // notes, logs, errors
}

// usageError is a mistake on the command line; it exits with code 2.
type usageError struct {
	cmd string // the command whose help explains the fix, "" for agentd itself
	msg string
}

// Error returns the message with a pointer to the relevant help.
func (e *usageError) Error() string {
	help := "agentd help"
	if e.cmd != "" {
		help += " " + e.cmd
	}
	return fmt.Sprintf("%s (see '%s')", e.msg, help)
}

// usagef returns a *usageError of cmd.
func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// exitCode maps the result of run to the process exit code.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	default:
		return exitError
	}
}

// report prints err, if any, as the program's last words.
func report(w io.Writer, err error) {
	if err != nil {
		fmt.Fprintf(w, "agentd: %v\n", err)
	}
}

// lockedWriter serializes writes to w: the logger and the serve command
// write to stderr from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes p to the underlying writer under the lock.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
