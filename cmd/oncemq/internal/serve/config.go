package serve

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is the validated configuration of `oncemq serve`.
type config struct {
	Listen    []string // MQTT over TCP, host:port each
	TLSListen []string // MQTT over TLS
	WSListen  []string // MQTT over WebSocket
	WSSListen []string // MQTT over WebSocket over TLS

	TLSCert     string // PEM certificate chain of the TLS listeners
	TLSKey      string // its PEM private key
	TLSClientCA string // PEM CA certificates; set: clients must present a certificate they signed

	ConfigFile string     // the YAML file the other settings were read from, if any
	DataDir    string     // folder of oncemq.db
	Sync       string     // "always" or "none"
	LogLevel   slog.Level // debug, info, warn or error
	MaxQueued  int        // >= 1

	// SysInterval is how often $SYS/broker/... is published; 0 turns it off.
	SysInterval time.Duration

	PasswordFile          string // mosquitto-format password file; "" none
	ACLFile               string // mosquitto-format ACL file; "" none
	AllowAnonymous        bool   // accept clients without credentials even with authentication on
	TLSIdentityAsUsername bool   // a verified client certificate's Common Name is the username

	// Duplicate detection by the publisher's dedup id (mqtt.Options.Dedup*). A window or a
	// maximum of 0 turns it off.
	DedupProperty  string
	DedupScope     string // client or topic
	DedupJSONField string // "" for none
	DedupWindow    time.Duration
	DedupMax       int

	ResponseTopicPrefix string // Response Information: this, the client id and "/"

	LogFormat string // "text" or "json"

	HTTPListen     string // host:port of the admin listener; "" for none
	AdminTokenFile string // file holding the admin API's bearer token; "" for none
	Pprof          bool   // serve /debug/pprof/ on the admin listener

	Limits limits // the other bounds on what clients may make the broker hold

	// origin says where each setting given came from, by flag name ("--tls-cert",
	// "ONCEMQ_TLS_CERT", "oncemq.yaml:4"), for the errors of checks that span settings.
	origin map[string]string
}

// defaultListen is the listener when none is given: local only, since nothing is authenticated.
const defaultListen = "127.0.0.1:1883"

// option is one setting of serve: a flag --NAME, the environment variable ONCEMQ_NAME and the
// config file key NAME, with the parser shared by all three. The order is the order of the usage
// text and of README's table. An arg ending in "..." marks a setting that may be given several
// times: the flag repeated, the variable comma-separated, the key a YAML list; its setter appends.
// An empty def means unset.
type option struct {
	flag, env, arg, def, help string // arg "": a flag given without a value, like --pprof; its variable says true or false
	set                       func(c *config, v string) error
}

var options = append([]option{
	{"config", "ONCEMQ_CONFIG", "FILE", "", "YAML file of settings, keyed by flag name (tls-cert: for --tls-cert);\n" +
		"a flag beats its variable, which beats the file", setConfigFile},
	{"listen", "ONCEMQ_LISTEN", "ADDR...", "", "MQTT over TCP on ADDR (host:port; port 0 picks a free port);\n" +
		defaultListen + " when no listener of any kind is given", appendAddr(func(c *config) *[]string { return &c.Listen })},
	{"tls-listen", "ONCEMQ_TLS_LISTEN", "ADDR...", "", "MQTT over TLS on ADDR (needs --tls-cert and --tls-key)",
		appendAddr(func(c *config) *[]string { return &c.TLSListen })},
	{"ws-listen", "ONCEMQ_WS_LISTEN", "ADDR...", "", "MQTT over WebSocket on ADDR, path /mqtt, subprotocol mqtt",
		appendAddr(func(c *config) *[]string { return &c.WSListen })},
	{"wss-listen", "ONCEMQ_WSS_LISTEN", "ADDR...", "", "MQTT over WebSocket over TLS on ADDR (needs --tls-cert and --tls-key)",
		appendAddr(func(c *config) *[]string { return &c.WSSListen })},
	{"tls-cert", "ONCEMQ_TLS_CERT", "FILE", "", "PEM certificate (chain) of the TLS listeners; reloaded on SIGHUP",
		setFile(func(c *config) *string { return &c.TLSCert })},
	{"tls-key", "ONCEMQ_TLS_KEY", "FILE", "", "PEM private key of --tls-cert; reloaded on SIGHUP",
		setFile(func(c *config) *string { return &c.TLSKey })},
	{"tls-client-ca", "ONCEMQ_TLS_CLIENT_CA", "FILE", "", "PEM CA certificates; when set, TLS clients must present a certificate\n" +
		"signed by one of them (mutual TLS); reloaded on SIGHUP", setFile(func(c *config) *string { return &c.TLSClientCA })},
	{"data", "ONCEMQ_DATA", "DIR", "./data", "data directory, holding oncemq.db and its log oncemq.wal", setDataDir},
	{"sync", "ONCEMQ_SYNC", "MODE", "always", "always: one fdatasync of the log per commit; none: no sync of the log, faster, survives\n" +
		"a process crash but an OS crash or power loss can lose recent commits or damage the log", setSync},
	{"log-level", "ONCEMQ_LOG_LEVEL", "LEVEL", "info", "debug, info, warn or error", setLogLevel},
	{"max-queued", "ONCEMQ_MAX_QUEUED", "N", "10000", "most messages queued per session (offline, or over its Receive Maximum)", setMaxQueued},
	{"password-file", "ONCEMQ_PASSWORD_FILE", "FILE", "", "password file in mosquitto's format (oncemq passwd, mosquitto_passwd);\n" +
		"clients must then log in unless --allow-anonymous", setPasswordFile},
	{"acl-file", "ONCEMQ_ACL_FILE", "FILE", "", "ACL file in mosquitto's syntax (user, topic, pattern with %u %c)", setACLFile},
	{"allow-anonymous", "ONCEMQ_ALLOW_ANONYMOUS", "", "false", "accept clients without credentials (the ACL's rules outside any user\n" +
		"block apply to them); needed to listen off loopback without authentication", setAllowAnonymous},
	{"tls-identity-as-username", "ONCEMQ_TLS_IDENTITY_AS_USERNAME", "", "false",
		"with mutual TLS, the client certificate's Common Name is the username", setTLSIdentityAsUsername},
	{"response-topic-prefix", "ONCEMQ_RESPONSE_TOPIC_PREFIX", "PREFIX", "reply/", "5.0 Response Information for a client that requests it: PREFIX<client id>/",
		setResponseTopicPrefix},
	{"dedup-property", "ONCEMQ_DEDUP_PROPERTY", "NAME", "dedup-id", "5.0 user property holding the publisher's own message id (the dedup id)", setDedupProperty},
	{"dedup-scope", "ONCEMQ_DEDUP_SCOPE", "SCOPE", "client", "client: a dedup id is unique per publishing client id; topic: per topic", setDedupScope},
	{"dedup-json-field", "ONCEMQ_DEDUP_JSON_FIELD", "NAME", "", "top-level field of a JSON payload holding the dedup id, for 3.1.1 publishers\n" +
		"(empty: none)", setDedupJSONField},
	{"dedup-window", "ONCEMQ_DEDUP_WINDOW", "DURATION", "5m", "how long a dedup id is remembered; 0 turns dedup off", setDedupWindow},
	{"dedup-max", "ONCEMQ_DEDUP_MAX", "N", "1000000", "most dedup ids remembered, the oldest forgotten first; 0 turns dedup off", setDedupMax},
	{"sys-interval", "ONCEMQ_SYS_INTERVAL", "DURATION", "10s", "how often $SYS/broker/... topics are published (in memory, never stored); 0 turns them off", setSysInterval},
	{"log-format", "ONCEMQ_LOG_FORMAT", "FORMAT", "text", "text (key=value) or json (one object a line), start-up errors included", setLogFormat},
	{"http-listen", "ONCEMQ_HTTP_LISTEN", "ADDR", "", "address of the HTTP admin listener (/metrics, /healthz, /readyz, the admin API);\n" +
		"off when empty", setHTTPListen},
	{"admin-token", "ONCEMQ_ADMIN_TOKEN", "FILE", "", "file holding the bearer token of the admin API (/admin/...);\n" +
		"without it only /metrics, /healthz and /readyz are served", setAdminTokenFile},
	{"pprof", "ONCEMQ_PPROF", "", "false", "serve /debug/pprof/ on the admin listener (needs --admin-token off loopback)", setPprof},
}, limitOptions...)

// allListeners is the address of every listener, of every kind.
func (c *config) allListeners() []string {
	return slices.Concat(c.Listen, c.TLSListen, c.WSListen, c.WSSListen)
}

// repeatable reports whether o may be given several times.
func (o option) repeatable() bool { return strings.HasSuffix(o.arg, "...") }

// assignment is one value given to one option, and where it was given.
type assignment struct {
	opt    option
	value  string
	origin string // "--name", "ONCEMQ_NAME" or "FILE:LINE"
}

// err is the error of a bad value, naming where it came from.
func (a assignment) err(err error) error {
	switch {
	case strings.HasPrefix(a.origin, "--"):
		return fmt.Errorf("invalid value %q for flag %s: %v", a.value, a.origin, err)
	case a.origin == a.opt.env:
		return fmt.Errorf("invalid value %q for environment variable %s: %v", a.value, a.origin, err)
	default:
		return fmt.Errorf("%s: invalid value %q for %s: %v", a.origin, a.value, a.opt.flag, err)
	}
}

// parseConfig reads serve's settings from the flags in args, the environment variables through
// getenv (an empty variable counts as unset) and the config file (--config), in that order of
// precedence, setting by setting: a setting given by a flag takes its values from the flags only,
// and a variable or key it overrides is not even checked. The error names the flag, variable or
// file and line, and the bad value; it is flag.ErrHelp for -h/--help.
func parseConfig(args []string, getenv func(string) string) (config, error) {
	flags, err := parseFlags(args)
	if err != nil {
		return config{}, err
	}
	given := map[string]bool{}
	for _, a := range flags {
		given[a.opt.flag] = true
	}
	env := fromEnv(getenv, given)
	for _, a := range env {
		given[a.opt.flag] = true
	}
	var file []assignment
	if path := configPath(flags, env); path != "" {
		if file, err = readConfigFile(path); err != nil {
			return config{}, err
		}
	}

	cfg := config{origin: map[string]string{}}
	for _, o := range options {
		if o.def == "" {
			continue
		}
		if err := o.set(&cfg, o.def); err != nil {
			panic("oncemq: bad default for --" + o.flag + ": " + err.Error())
		}
	}
	assigned := append(flags, env...)
	for _, a := range file {
		if !given[a.opt.flag] {
			assigned = append(assigned, a)
		}
	}
	for _, a := range assigned {
		if err := a.opt.set(&cfg, a.value); err != nil {
			return config{}, a.err(err)
		}
		cfg.origin[a.opt.flag] = a.origin
	}
	if len(cfg.Listen)+len(cfg.TLSListen)+len(cfg.WSListen)+len(cfg.WSSListen) == 0 {
		cfg.Listen = []string{defaultListen}
	}
	return cfg, cfg.check()
}

// parseFlags returns the flags of args in command-line order, unchecked.
func parseFlags(args []string) ([]assignment, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the caller prints the error and the usage
	fs.Usage = func() {}
	var flags []assignment
	for _, o := range options {
		record := func(v string) error {
			flags = append(flags, assignment{opt: o, value: v, origin: "--" + o.flag})
			return nil
		}
		if o.arg == "" { // a boolean: --name alone, or --name=false
			fs.BoolFunc(o.flag, o.help, record)
		} else {
			fs.Func(o.flag, o.help, record)
		}
	}
	if err := fs.Parse(args); err != nil {
		switch msg := err.Error(); {
		case errors.Is(err, flag.ErrHelp):
			return nil, err
		case strings.HasPrefix(msg, "flag provided but not defined: -"):
			return nil, fmt.Errorf("unknown flag -%s", strings.TrimPrefix(msg, "flag provided but not defined: "))
		case strings.HasPrefix(msg, "flag needs an argument: -"):
			return nil, fmt.Errorf("flag -%s needs a value", strings.TrimPrefix(msg, "flag needs an argument: "))
		default:
			return nil, err
		}
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return flags, nil
}

// fromEnv returns the variables of the settings not given, in table order; a repeatable
// setting's variable is a comma-separated list.
func fromEnv(getenv func(string) string, given map[string]bool) []assignment {
	var env []assignment
	for _, o := range options {
		v := strings.TrimSpace(getenv(o.env))
		if given[o.flag] || v == "" {
			continue
		}
		values := []string{v}
		if o.repeatable() {
			values = strings.Split(v, ",")
		}
		for _, v := range values {
			if v = strings.TrimSpace(v); v != "" {
				env = append(env, assignment{opt: o, value: v, origin: o.env})
			}
		}
	}
	return env
}

// configPath is the last --config flag, or else ONCEMQ_CONFIG.
func configPath(flags, env []assignment) string {
	path := ""
	for _, a := range append(env, flags...) {
		if a.opt.flag == "config" {
			path = a.value
		}
	}
	return path
}

// writeUsage prints the usage text of serve, with each flag's variable and default.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: oncemq [serve] [flags]\n\nRun the MQTT broker until SIGINT or SIGTERM; SIGHUP reloads the certificates.\n\n"+
		"Flags (each also set by its environment variable and its key in the --config file;\n"+
		"a flag wins over the variable, which wins over the file; ADDR... may be repeated):\n")
	for _, o := range options {
		fmt.Fprintf(w, "  --%s %s\n", o.flag, o.arg) // a boolean has no ARG
		for _, line := range strings.Split(o.help, "\n") {
			fmt.Fprintf(w, "        %s\n", line)
		}
		if o.def == "" {
			fmt.Fprintf(w, "        $%s\n", o.env)
		} else {
			fmt.Fprintf(w, "        $%s, default %s\n", o.env, o.def)
		}
	}
}

func setConfigFile(c *config, v string) error {
	c.ConfigFile = v
	return nil // read by parseConfig, which reports a missing file
}

// appendAddr is the setter of a repeatable listener address.
func appendAddr(field func(*config) *[]string) func(*config, string) error {
	return func(c *config, v string) error {
		_, port, err := net.SplitHostPort(v)
		if err != nil {
			return errors.New("want host:port, like 127.0.0.1:1883 or :1883")
		}
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || port == "" || n > 65535 {
			return errors.New("port must be a number from 0 to 65535")
		}
		*field(c) = append(*field(c), v)
		return nil
	}
}

// setFile is the setter of a file the broker reads: it must exist and be readable now, so that a
// typo stops start-up where it was written.
func setFile(field func(*config) *string) func(*config, string) error {
	return func(c *config, v string) error {
		f, err := os.Open(v)
		if err != nil {
			return err
		}
		f.Close()
		*field(c) = v
		return nil
	}
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

func setPasswordFile(c *config, v string) error {
	c.PasswordFile = v
	return nil
}

func setACLFile(c *config, v string) error {
	c.ACLFile = v
	return nil
}

func setAllowAnonymous(c *config, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return errors.New("want true or false")
	}
	c.AllowAnonymous = b
	return nil
}

func setTLSIdentityAsUsername(c *config, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return errors.New("want true or false")
	}
	c.TLSIdentityAsUsername = b
	return nil
}

func setResponseTopicPrefix(c *config, v string) error {
	if v == "" || strings.ContainsAny(v, "+#") {
		return errors.New("must be a non-empty topic prefix without wildcards")
	}
	c.ResponseTopicPrefix = v
	return nil
}

func setDedupProperty(c *config, v string) error {
	if v == "" {
		return errors.New("must not be empty")
	}
	c.DedupProperty = v
	return nil
}

func setDedupScope(c *config, v string) error {
	switch v {
	case "client", "topic":
		c.DedupScope = v
		return nil
	}
	return errors.New("want client or topic")
}

func setDedupJSONField(c *config, v string) error {
	c.DedupJSONField = v
	return nil
}

func setDedupWindow(c *config, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return errors.New("want a duration like 5m or 90s, or 0 to turn dedup off")
	}
	c.DedupWindow = d
	return nil
}

func setDedupMax(c *config, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return errors.New("want a whole number, or 0 to turn dedup off")
	}
	c.DedupMax = n
	return nil
}

func setSysInterval(c *config, v string) error {
	d, err := time.ParseDuration(v)
	if v == "0" {
		d, err = 0, nil
	}
	if err != nil || d < 0 {
		return errors.New("want a duration such as 10s or 1m, or 0 to turn $SYS off")
	}
	c.SysInterval = d
	return nil
}

func setLogFormat(c *config, v string) error {
	switch strings.ToLower(v) {
	case "text", "json":
		c.LogFormat = strings.ToLower(v)
		return nil
	}
	return errors.New("want text or json")
}

func setHTTPListen(c *config, v string) error {
	if v != "" {
		var probe []string
		if err := appendAddr(func(*config) *[]string { return &probe })(c, v); err != nil {
			return err
		}
	}
	c.HTTPListen = v
	return nil
}

func setAdminTokenFile(c *config, v string) error {
	c.AdminTokenFile = v
	return nil
}

func setPprof(c *config, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return errors.New("want true or false")
	}
	c.Pprof = b
	return nil
}
