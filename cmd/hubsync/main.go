// Command hubsync runs the hubsync sync service and its tools.
//
//	hubsync migrate [up|status]   apply or show the schema migrations
//	hubsync serve                 run the service
//	hubsync demo                  run the two-way sync demo on embedded SQLite
//	hubsync chaos                 kill replicas and restart the database under load, then check both sides
//	hubsync sim                   run the HubSpot simulator
//	hubsync status                show queue depths and dead letters
//	hubsync dlq list|retry        inspect and re-queue dead letters
//	hubsync cleanup               delete old processed events
//	hubsync mapping check         check the mapping against the portal's properties
//	hubsync drift                 find and repair drift between the database and HubSpot
//
// Configuration comes from flags and the environment; `hubsync <command> -h`
// lists both.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
	// The zone database, for HUBSYNC_HUBSPOT_TIME_ZONE and the account's zone
	// on a machine without one (a scratch container).
	_ "time/tzdata"
)

// command is one subcommand: one file each.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(name string, c command) { commands[name] = c }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks an error whose message is usage help; it exits 2.
var errUsage = errors.New("usage")

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "hubsync: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}

	// The first SIGINT/SIGTERM cancels ctx, asking the command to drain and stop;
	// a second one aborts the process at once.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	finished := make(chan struct{}) // closed when the command returns
	defer close(finished)
	go func() {
		select {
		case <-sigs:
		case <-finished:
			return
		}
		fmt.Fprintln(stderr, "hubsync: stopping gracefully; send the signal again to abort")
		cancel()
		// Not ctx.Done(): it is already closed, and the second signal must
		// still abort while the command drains.
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "hubsync: aborted")
			os.Exit(130)
		case <-finished:
		}
	}()

	if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if errors.Is(err, errUsage) {
			return 2
		}
		fmt.Fprintf(stderr, "hubsync %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: hubsync <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
}

// envOr returns the environment variable k, or def when unset or empty.
func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("hubsync "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
