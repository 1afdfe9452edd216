package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"strings"
)

// command is one subcommand of agentd.
type command struct {
	name    string // as typed after "agentd", e.g. "accounts create"
	args    string // positional arguments for the synopsis, e.g. "NAME"
	nargs   int    // how many positional arguments it takes, exactly
	summary string // one line for the command list
	details string // description and examples for its help
	// setup defines the command's flags on fs and returns the function that
	// runs it with the positional arguments, once fs is parsed.
	setup func(fs *flag.FlagSet, e *env) func(ctx context.Context, args []string) error
}

// commands lists every subcommand in the order of the help.
var commands = []*command{
	serveCommand,
	accountsCreateCommand, accountsUpdateCommand, accountsListCommand,
	keysCreateCommand, keysListCommand, keysRevokeCommand,
	secretsRotateCommand,
	migrateUpCommand, migrateStatusCommand,
	healthcheckCommand, versionCommand,
}

// groups are the words that only introduce subcommands.
var groups = map[string]bool{"accounts": true, "keys": true, "secrets": true, "migrate": true}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "-help" || arg == "--help"
}

// dispatch runs the subcommand named by the first words of args.
func (e *env) dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		printHelp(e.stderr)
		return usagef("", "no command given")
	}
	if isHelp(args[0]) {
		return e.help(args[1:])
	}
	if groups[args[0]] && len(args) > 1 && isHelp(args[1]) {
		printGroupHelp(e.stdout, args[0])
		return nil
	}
	cmd, rest, err := lookup(args)
	if err != nil {
		return err
	}
	return e.execute(ctx, cmd, rest)
}

// lookup finds the command named by the first one or two words of args and
// returns it with the remaining arguments.
func lookup(args []string) (*command, []string, error) {
	if groups[args[0]] {
		if len(args) < 2 {
			return nil, nil, usagef(args[0], "'agentd %s' needs a subcommand: %s",
				args[0], strings.Join(subcommands(args[0]), ", "))
		}
		if cmd := find(args[0] + " " + args[1]); cmd != nil {
			return cmd, args[2:], nil
		}
		return nil, nil, usagef(args[0], "unknown command 'agentd %s %s'", args[0], args[1])
	}
	if cmd := find(args[0]); cmd != nil {
		return cmd, args[1:], nil
	}
	return nil, nil, usagef("", "unknown command %q", args[0])
}

// find returns the command called name, or nil.
func find(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// subcommands returns the second words of the commands of group.
func subcommands(group string) []string {
	var out []string
	for _, c := range commands {
		if sub, ok := strings.CutPrefix(c.name, group+" "); ok {
			out = append(out, sub)
		}
	}
	return out
}

// execute parses args for cmd and runs it. -h and --help print its help.
func (e *env) execute(ctx context.Context, cmd *command, args []string) error {
	fs := newFlagSet(cmd.name)
	runCmd := cmd.setup(fs, e)
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printCommandHelp(e.stdout, cmd, fs)
		return nil
	}
	if err != nil {
		return usagef(cmd.name, "%s: %v", cmd.name, err)
	}
	if len(pos) != cmd.nargs {
		return wrongArgs(cmd, pos)
	}
	return runCmd(ctx, pos)
}

// wrongArgs explains a wrong number of positional arguments.
func wrongArgs(cmd *command, pos []string) error {
	if cmd.nargs == 0 {
		return usagef(cmd.name, "%s takes no arguments, got %q", cmd.name, strings.Join(pos, " "))
	}
	if len(pos) < cmd.nargs {
		return usagef(cmd.name, "%s needs %s", cmd.name, cmd.args)
	}
	return usagef(cmd.name, "%s takes only %s, got extra %q", cmd.name, cmd.args, strings.Join(pos[cmd.nargs:], " "))
}

// newFlagSet returns a silent flag set: errors are returned, and help is
// printed by execute.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses args with fs, allowing flags before, between and after
// the positional arguments (`accounts create acme --tier pro`), and returns
// the positional ones. Everything after "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// help prints the help of the command named by topic, or the overview.
func (e *env) help(topic []string) error {
	if len(topic) == 0 {
		printHelp(e.stdout)
		return nil
	}
	if groups[topic[0]] && len(topic) == 1 {
		printGroupHelp(e.stdout, topic[0])
		return nil
	}
	cmd, _, err := lookup(topic)
	if err != nil {
		return err
	}
	fs := newFlagSet(cmd.name)
	cmd.setup(fs, e)
	printCommandHelp(e.stdout, cmd, fs)
	return nil
}
