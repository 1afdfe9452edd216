package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3".
var version = "dev"

const helpIntro = `agentd runs the agent management API (create, configure, message and delete
AI agents over HTTP) and administers the accounts and API keys it accepts.

Usage:
  agentd <command> [arguments] [flags]

Commands:
`

const helpOutro = `
Every command that uses the database takes --db: a SQLite file path or a
postgres:// URL (default $AGENTD_DB, else ./agentd.db). Flags may come before
or after the arguments and take one or two dashes.

Getting started:
  agentd serve                                    # prints the first API key
  curl -H "Authorization: Bearer $KEY" http://localhost:8080/v1/agents

More examples:
  agentd accounts create acme --tier pro
  agentd keys create --account acme --scope read --expires 90d
  agentd keys list --account acme
  agentd keys revoke agk_AbCdEfGh
  AGENTD_SECRET_KEY=$NEW_KEY agentd secrets rotate --old "$OLD_KEY"
  agentd migrate status --db postgres://agentd@db/agentd

Run 'agentd help <command>' (for instance 'agentd help keys create') for a
command's flags, and 'agentd help serve' for every configuration variable.
`

// printHelp writes the overview of agentd.
func printHelp(w io.Writer) {
	var b strings.Builder
	b.WriteString(helpIntro)
	writeCommandList(&b, "")
	fmt.Fprintf(&b, "  %-24s %s\n", "help [command]", "show this help, or a command's")
	b.WriteString("\nEnvironment (the flags of 'agentd serve' override it):\n")
	for _, s := range settings {
		fmt.Fprintf(&b, "  %-24s %s (default %s)\n", s.env, strings.ReplaceAll(s.usage, "`", ""), settingDefault(s))
	}
	b.WriteString(helpOutro)
	_, _ = io.WriteString(w, b.String())
}

// printGroupHelp writes the commands of group ("accounts", "keys", "secrets", "migrate").
func printGroupHelp(w io.Writer, group string) {
	fmt.Fprintf(w, "Usage: agentd %s <command> [arguments] [flags]\n\nCommands:\n", group)
	writeCommandList(w, group)
	fmt.Fprintf(w, "\nRun 'agentd help %s <command>' for a command's flags.\n", group)
}

// writeCommandList writes one line per command of group ("" for all).
func writeCommandList(w io.Writer, group string) {
	for _, c := range commands {
		if group == "" || strings.HasPrefix(c.name, group+" ") {
			fmt.Fprintf(w, "  %-24s %s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
		}
	}
}

// settingDefault is the documented default of s.
func settingDefault(s setting) string {
	if s.shown != "" {
		return s.shown
	}
	return s.def
}

// printCommandHelp writes the help of cmd, whose flags are defined on fs.
func printCommandHelp(w io.Writer, cmd *command, fs *flag.FlagSet) {
	synopsis := strings.TrimSpace("agentd " + cmd.name + " " + cmd.args)
	fmt.Fprintf(w, "Usage: %s [flags]\n\n%s.\n\n%s\n", synopsis, capitalize(cmd.summary), cmd.details)
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s %s\n      %s%s\n", f.Name, name, usage, flagDefault(cmd, f))
	})
	if b.Len() > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s", b.String())
	}
}

// flagDefault describes the default of f, and for serve the variable it mirrors.
func flagDefault(cmd *command, f *flag.Flag) string {
	var parts []string
	if cmd == serveCommand {
		for _, s := range settings {
			if s.flag == f.Name {
				parts = append(parts, "env "+s.env)
				if s.shown != "" {
					parts = append(parts, "default "+s.shown)
				}
			}
		}
	}
	if f.DefValue != "" {
		parts = append(parts, "default "+redactDSN(f.DefValue))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// capitalize upper-cases the first letter of s.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

var versionCommand = &command{
	name:    "version",
	summary: "print the version",
	details: "Prints the version of agentd and of the Go toolchain that built it.",
	setup: func(_ *flag.FlagSet, e *env) func(context.Context, []string) error {
		return func(context.Context, []string) error {
			fmt.Fprintf(e.stdout, "agentd %s (%s, %s/%s)\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		}
	},
}

// buildVersion returns version, or the module version when agentd was
// installed with go install module@version.
func buildVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}
