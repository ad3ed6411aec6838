package serve

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
)

// config is the validated configuration of `oncemq serve`.
type config struct {
	Listen    string     // host:port
	DataDir   string     // folder of oncemq.db
	Sync      string     // "always" or "none"
	LogLevel  slog.Level // debug, info, warn or error
	MaxQueued int        // >= 1
	Limits    limits     // the other bounds on what clients may make the broker hold
}

// option is one setting of serve: a flag, the environment variable that also sets it, and the
// parser shared by both. The order is the order of the usage text.
type option struct {
	flag, env, arg, def, help string
	set                       func(c *config, v string) error
}

var options = append([]option{
	{"listen", "ONCEMQ_LISTEN", "ADDR", "127.0.0.1:1883", "TCP address to listen on; port 0 picks a free port", setListen},
	{"data", "ONCEMQ_DATA", "DIR", "./data", "data directory, holding oncemq.db", setDataDir},
	{"sync", "ONCEMQ_SYNC", "MODE", "always", "always: fsync every commit; none: no fsync, faster, survives a process crash\n" +
		"but an OS crash or power loss can lose recent commits or corrupt the store", setSync},
	{"log-level", "ONCEMQ_LOG_LEVEL", "LEVEL", "info", "debug, info, warn or error", setLogLevel},
	{"max-queued", "ONCEMQ_MAX_QUEUED", "N", "10000", "most messages queued per session (offline, or over its Receive Maximum)", setMaxQueued},
}, limitOptions...)

// parseConfig reads serve's flags from args and, for each flag not given, its environment
// variable through getenv (an empty variable counts as unset). A flag given on the command line
// beats its variable; a variable it overrides is not even checked. The error names the flag or
// variable and the bad value; it is flag.ErrHelp for -h/--help.
func parseConfig(args []string, getenv func(string) string) (config, error) {
	var cfg config
	for _, o := range options {
		if err := o.set(&cfg, o.def); err != nil {
			panic("oncemq: bad default for --" + o.flag + ": " + err.Error())
		}
	}

	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the caller prints the error and the usage
	fs.Usage = func() {}
	var badFlag error // the flag package's own message for a bad value says "-name", not "--name"
	for _, o := range options {
		fs.Func(o.flag, o.help, func(v string) error {
			err := o.set(&cfg, v)
			if err != nil {
				badFlag = fmt.Errorf("invalid value %q for flag --%s: %v", v, o.flag, err)
			}
			return err
		})
	}
	if err := fs.Parse(args); err != nil {
		switch msg := err.Error(); {
		case errors.Is(err, flag.ErrHelp):
			return config{}, err
		case badFlag != nil:
			return config{}, badFlag
		case strings.HasPrefix(msg, "flag provided but not defined: -"):
			return config{}, fmt.Errorf("unknown flag -%s", strings.TrimPrefix(msg, "flag provided but not defined: "))
		case strings.HasPrefix(msg, "flag needs an argument: -"):
			return config{}, fmt.Errorf("flag -%s needs a value", strings.TrimPrefix(msg, "flag needs an argument: "))
		default:
			return config{}, err
		}
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}

	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, o := range options {
		if given[o.flag] {
			continue
		}
		v := strings.TrimSpace(getenv(o.env))
		if v == "" {
			continue
		}
		if err := o.set(&cfg, v); err != nil {
			return config{}, fmt.Errorf("invalid value %q for environment variable %s: %v", v, o.env, err)
		}
	}
	return cfg, nil
}

// writeUsage prints the usage text of serve, with each flag's variable and default.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: oncemq [serve] [flags]\n\nRun the MQTT broker until SIGINT or SIGTERM.\n\n"+
		"Flags (each also set by its environment variable; the flag wins):\n")
	for _, o := range options {
		fmt.Fprintf(w, "  --%s %s\n", o.flag, o.arg)
		for _, line := range strings.Split(o.help, "\n") {
			fmt.Fprintf(w, "        %s\n", line)
		}
		fmt.Fprintf(w, "        $%s, default %s\n", o.env, o.def)
	}
}

func setListen(c *config, v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return errors.New("want host:port, like 127.0.0.1:1883 or :1883")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || port == "" || n > 65535 {
		return errors.New("port must be a number from 0 to 65535")
	}
	c.Listen = v
	return nil
}

func setDataDir(c *config, v string) error {
	if v == "" {
		return errors.New("must not be empty")
	}
	c.DataDir = v
	return nil
}

func setSync(c *config, v string) error {
	switch v {
	case "always", "none":
		c.Sync = v
		return nil
	}
	return errors.New("want always or none")
}

func setLogLevel(c *config, v string) error {
	switch strings.ToLower(v) {
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "info":
		c.LogLevel = slog.LevelInfo
	case "warn":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		return errors.New("want debug, info, warn or error")
	}
	return nil
}

func setMaxQueued(c *config, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return errors.New("want a whole number of at least 1")
	}
	c.MaxQueued = n
	return nil
}
