package serve

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func defaults() config {
	return withDefaults(config{Listen: []string{"127.0.0.1:1883"}, DataDir: "./data", Sync: "always", LogLevel: slog.LevelInfo, MaxQueued: 10000})
}

// withDefaults is c with the settings that are not part of c at their defaults (dedup, $SYS, log format, limits).
func withDefaults(c config) config {
	c.DedupProperty, c.DedupScope, c.DedupWindow, c.DedupMax = "dedup-id", "client", 5*time.Minute, 1_000_000
	c.ResponseTopicPrefix = "reply/"
	c.SysInterval = 10 * time.Second
	c.LogFormat = "text"
	c.Limits = defaultLimits
	return c
}

// defaultLimits are the limits' defaults as the options table states them.
var defaultLimits = limits{MessageCache: 32 << 20, MaxQueuedBytes: 64 << 20, MaxSubscriptions: 1000, MaxSessions: 200000, MaxRetained: 100000,
	MaxRetainedBytes: 256 << 20, MaxWillSize: 64 << 10, MaxConnections: 100000, WriteQueueBytes: 4 << 20,
	ReadBudgetBytes: 64 << 20, PacketTimeout: 30 * time.Second, ReceiveMaximum: 1024}

// The limits' flags and sizes parse, and a bad value names its flag.
func TestParseLimits(t *testing.T) {
	cfg, err := parseConfig([]string{"--max-queued-bytes=2MiB", "--queue-full=drop-oldest", "--max-connections=5",
		"--receive-maximum=65535", "--max-keepalive=60", "--max-session-expiry=3600", "--packet-timeout=2s"}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Limits
	if l.MaxQueuedBytes != 2<<20 || l.QueueFull != mqtt.QueueFullDropOldest || l.MaxConnections != 5 ||
		l.ReceiveMaximum != 65535 || l.MaxKeepAlive != 60 || l.MaxSessionExpiry != 3600 || l.PacketTimeout != 2*time.Second {
		t.Errorf("limits %+v", l)
	}
	for _, bad := range []string{"--receive-maximum=65536", "--queue-full=drop", "--max-queued-bytes=1TB", "--max-connections=0"} {
		if _, err := parseConfig([]string{bad}, envOf(nil)); err == nil || !strings.Contains(err.Error(), strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("%s: err %v, want one naming the flag", bad, err)
		}
	}
}

func TestParseServeConfig(t *testing.T) {
	with := func(f func(*config)) config { c := defaults(); f(&c); return c }
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want config
	}{
		{"defaults", nil, nil, defaults()},
		{"empty env is unset", nil, map[string]string{"ONCEMQ_LISTEN": "", "ONCEMQ_SYNC": "", "ONCEMQ_MAX_QUEUED": ""}, defaults()},
		{"unrelated env", nil, map[string]string{"LISTEN": ":1", "ONCEMQ_OTHER": "x"}, defaults()},

		{"env listen", nil, map[string]string{"ONCEMQ_LISTEN": ":1883"}, with(func(c *config) { c.Listen = []string{":1883"} })},
		{"env data", nil, map[string]string{"ONCEMQ_DATA": "/data"}, with(func(c *config) { c.DataDir = "/data" })},
		{"env sync", nil, map[string]string{"ONCEMQ_SYNC": "none"}, with(func(c *config) { c.Sync = "none" })},
		{"env log level", nil, map[string]string{"ONCEMQ_LOG_LEVEL": "debug"}, with(func(c *config) { c.LogLevel = slog.LevelDebug })},
		{"env log level upper case", nil, map[string]string{"ONCEMQ_LOG_LEVEL": "WARN"}, with(func(c *config) { c.LogLevel = slog.LevelWarn })},
		{"env max queued", nil, map[string]string{"ONCEMQ_MAX_QUEUED": "5"}, with(func(c *config) { c.MaxQueued = 5 })},
		{"env value trimmed", nil, map[string]string{"ONCEMQ_SYNC": " none\n"}, with(func(c *config) { c.Sync = "none" })},

		{"flag listen", []string{"--listen", "[::1]:0"}, nil, with(func(c *config) { c.Listen = []string{"[::1]:0"} })},
		{"flag data", []string{"--data=/var/lib/oncemq"}, nil, with(func(c *config) { c.DataDir = "/var/lib/oncemq" })},
		{"flag sync", []string{"-sync", "none"}, nil, with(func(c *config) { c.Sync = "none" })},
		{"flag log level", []string{"--log-level", "error"}, nil, with(func(c *config) { c.LogLevel = slog.LevelError })},
		{"flag max queued", []string{"--max-queued=1"}, nil, with(func(c *config) { c.MaxQueued = 1 })},
		{"flag given twice, last wins", []string{"--sync", "none", "--sync", "always"}, nil, defaults()},
		{"all flags", []string{"--listen", "0.0.0.0:1884", "--data", "d", "--sync", "none", "--log-level", "warn", "--max-queued", "7"}, nil,
			withDefaults(config{Listen: []string{"0.0.0.0:1884"}, DataDir: "d", Sync: "none", LogLevel: slog.LevelWarn, MaxQueued: 7})},

		{"listen repeated", []string{"--listen", ":1", "--listen", ":2"}, nil, with(func(c *config) { c.Listen = []string{":1", ":2"} })},
		{"env listen comma-separated", nil, map[string]string{"ONCEMQ_LISTEN": ":1, :2,"}, with(func(c *config) { c.Listen = []string{":1", ":2"} })},
		{"flag listen replaces env listen", []string{"--listen", ":3"}, map[string]string{"ONCEMQ_LISTEN": ":1,:2"}, with(func(c *config) { c.Listen = []string{":3"} })},
		{"no TCP default beside another listener", []string{"--ws-listen", ":8080"}, nil,
			with(func(c *config) { c.Listen = nil; c.WSListen = []string{":8080"} })},
		{"every kind of listener", []string{"--ws-listen", ":3", "--listen", ":1"}, map[string]string{"ONCEMQ_WS_LISTEN": ":9"},
			with(func(c *config) { c.Listen = []string{":1"}; c.WSListen = []string{":3"} })},
		{"dedup flags", []string{"--dedup-property", "msg-id", "--dedup-scope", "topic", "--dedup-json-field", "id",
			"--dedup-window", "90s", "--dedup-max", "0"}, nil, with(func(c *config) {
			c.DedupProperty, c.DedupScope, c.DedupJSONField, c.DedupWindow, c.DedupMax = "msg-id", "topic", "id", 90*time.Second, 0
		})},
		{"response topic prefix", []string{"--response-topic-prefix", "rsp/"}, nil,
			with(func(c *config) { c.ResponseTopicPrefix = "rsp/" })},
		{"env dedup window", nil, map[string]string{"ONCEMQ_DEDUP_WINDOW": "0"}, with(func(c *config) { c.DedupWindow = 0 })},
		{"flag sys interval", []string{"--sys-interval", "1s"}, nil, with(func(c *config) { c.SysInterval = time.Second })},
		{"flag sys interval 0 is off", []string{"--sys-interval=0"}, nil, with(func(c *config) { c.SysInterval = 0 })},
		{"env sys interval", nil, map[string]string{"ONCEMQ_SYS_INTERVAL": "1m"}, with(func(c *config) { c.SysInterval = time.Minute })},

		{"admin flags", []string{"--log-format", "json", "--http-listen", "127.0.0.1:9100", "--admin-token", "tok", "--pprof"}, nil,
			with(func(c *config) {
				c.LogFormat, c.HTTPListen, c.AdminTokenFile, c.Pprof = "json", "127.0.0.1:9100", "tok", true
			})},
		{"admin env", nil, map[string]string{"ONCEMQ_LOG_FORMAT": "JSON", "ONCEMQ_HTTP_LISTEN": ":9100", "ONCEMQ_PPROF": "true"},
			with(func(c *config) { c.LogFormat, c.HTTPListen, c.Pprof = "json", ":9100", true })},
		{"flags beat env",
			[]string{"--listen", ":2", "--data", "f", "--sync", "always", "--log-level", "info", "--max-queued", "3"},
			map[string]string{"ONCEMQ_LISTEN": ":1", "ONCEMQ_DATA": "e", "ONCEMQ_SYNC": "none", "ONCEMQ_LOG_LEVEL": "debug", "ONCEMQ_MAX_QUEUED": "9"},
			withDefaults(config{Listen: []string{":2"}, DataDir: "f", Sync: "always", LogLevel: slog.LevelInfo, MaxQueued: 3})},
		{"flag beats env, others from env",
			[]string{"--sync", "always"},
			map[string]string{"ONCEMQ_SYNC": "none", "ONCEMQ_DATA": "e"},
			with(func(c *config) { c.DataDir = "e" })},
		{"bad env overridden by its flag is ignored",
			[]string{"--sync", "none", "--max-queued", "2"},
			map[string]string{"ONCEMQ_SYNC": "fsync", "ONCEMQ_MAX_QUEUED": "lots"},
			with(func(c *config) { c.Sync = "none"; c.MaxQueued = 2 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConfig(tt.args, envOf(tt.env))
			if err != nil {
				t.Fatalf("parseConfig(%q) error: %v", tt.args, err)
			}
			got.origin = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseConfig(%q)\n got  %+v\n want %+v", tt.args, got, tt.want)
			}
		})
	}
}

func TestParseServeConfigErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		mentions []string // the error must contain each
	}{
		{"unknown sync flag", []string{"--sync", "fsync"}, nil, []string{"--sync", `"fsync"`}},
		{"sync is case-sensitive", []string{"--sync=ALWAYS"}, nil, []string{"--sync", `"ALWAYS"`}},
		{"bad log level flag", []string{"--log-level", "verbose"}, nil, []string{"--log-level", `"verbose"`}},
		{"max queued not a number", []string{"--max-queued", "ten"}, nil, []string{"--max-queued", `"ten"`}},
		{"max queued zero", []string{"--max-queued", "0"}, nil, []string{"--max-queued", `"0"`}},
		{"max queued negative", []string{"--max-queued=-5"}, nil, []string{"--max-queued", `"-5"`}},
		{"max queued overflow", []string{"--max-queued", "99999999999999999999"}, nil, []string{"--max-queued", `"99999999999999999999"`}},
		{"listen without port", []string{"--listen", "localhost"}, nil, []string{"--listen", `"localhost"`}},
		{"listen empty port", []string{"--listen", "localhost:"}, nil, []string{"--listen", `"localhost:"`}},
		{"listen port not a number", []string{"--listen", ":mqtt"}, nil, []string{"--listen", `":mqtt"`}},
		{"listen port too big", []string{"--listen", ":65536"}, nil, []string{"--listen", `":65536"`}},
		{"empty data", []string{"--data", ""}, nil, []string{"--data", `""`}},
		{"sys interval without unit", []string{"--sys-interval", "10"}, nil, []string{"--sys-interval", `"10"`}},
		{"sys interval negative", []string{"--sys-interval=-1s"}, nil, []string{"--sys-interval", `"-1s"`}},
		{"value with a dash", []string{"--sync", "a -b"}, nil, []string{"--sync", `"a -b"`}},
		{"unknown flag", []string{"--port", "1883"}, nil, []string{"unknown flag", "--port"}},
		{"unknown single-dash flag", []string{"-v"}, nil, []string{"unknown flag", "-v"}},
		{"flag without value", []string{"--data"}, nil, []string{"--data", "needs a value"}},
		{"positional argument", []string{"stray"}, nil, []string{"unexpected argument", `"stray"`}},
		{"positional after flags", []string{"--sync", "none", "extra"}, nil, []string{"unexpected argument", `"extra"`}},
		{"subcommand after flags", []string{"--sync", "none", "serve"}, nil, []string{"unexpected argument", `"serve"`}},

		{"tls-listen without tls-cert", []string{"--tls-listen", "127.0.0.1:0"}, nil, []string{"--tls-listen", "needs tls-cert and tls-key"}},
		{"wss-listen from env without tls-cert", nil, map[string]string{"ONCEMQ_WSS_LISTEN": ":8443"}, []string{"ONCEMQ_WSS_LISTEN", "needs tls-cert"}},
		{"missing cert file", []string{"--tls-cert", "no-such.pem"}, nil, []string{"--tls-cert", `"no-such.pem"`, "no such file"}},
		{"missing client CA file", nil, map[string]string{"ONCEMQ_TLS_CLIENT_CA": "no-ca.pem"}, []string{"ONCEMQ_TLS_CLIENT_CA", "no such file"}},
		{"bad address in a repeated listen", []string{"--listen", ":1", "--listen", "nowhere"}, nil, []string{"--listen", `"nowhere"`}},
		{"bad address in the env list", nil, map[string]string{"ONCEMQ_WS_LISTEN": ":1,:x"}, []string{"ONCEMQ_WS_LISTEN", `":x"`}},
		{"missing config file", []string{"--config", "no-such.yaml"}, nil, []string{"no-such.yaml"}},

		{"bad env listen", nil, map[string]string{"ONCEMQ_LISTEN": "1883"}, []string{"ONCEMQ_LISTEN", `"1883"`}},
		{"bad env sync", nil, map[string]string{"ONCEMQ_SYNC": "sometimes"}, []string{"ONCEMQ_SYNC", `"sometimes"`}},
		{"bad env log level", nil, map[string]string{"ONCEMQ_LOG_LEVEL": "trace"}, []string{"ONCEMQ_LOG_LEVEL", `"trace"`}},
		{"bad env max queued", nil, map[string]string{"ONCEMQ_MAX_QUEUED": "1e4"}, []string{"ONCEMQ_MAX_QUEUED", `"1e4"`}},
		{"bad env max queued zero", nil, map[string]string{"ONCEMQ_MAX_QUEUED": "0"}, []string{"ONCEMQ_MAX_QUEUED", `"0"`}},
		{"bad env not overridden by another flag", []string{"--sync", "none"}, map[string]string{"ONCEMQ_LOG_LEVEL": "loud"},
			[]string{"ONCEMQ_LOG_LEVEL", `"loud"`}},
		{"bad flag reported before bad env", []string{"--sync", "x"}, map[string]string{"ONCEMQ_LOG_LEVEL": "loud"},
			[]string{"--sync", `"x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConfig(tt.args, envOf(tt.env))
			if err == nil {
				t.Fatalf("parseConfig(%q) = %+v, want an error", tt.args, got)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("error %q does not mention %s", msg, m)
				}
			}
		})
	}
}

func TestParseServeConfigHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help"} {
		if _, err := parseConfig([]string{"--sync", "none", arg}, envOf(nil)); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("parseConfig(%q) error = %v, want flag.ErrHelp", arg, err)
		}
	}
}

func TestServeUsageListsEveryOption(t *testing.T) {
	var b bytes.Buffer
	writeUsage(&b)
	for _, o := range options {
		want := "$" + o.env + "\n"
		if o.def != "" {
			want = "$" + o.env + ", default " + o.def + "\n"
		}
		for _, s := range []string{"--" + o.flag + " " + o.arg + "\n", want} {
			if !strings.Contains(b.String(), s) {
				t.Errorf("usage lacks %q:\n%s", s, b.String())
			}
		}
	}
}

// TLS settings that only make sense together are refused apart, naming what is missing.
func TestParseServeConfigTLSPairs(t *testing.T) {
	dir := t.TempDir()
	f := mqtttest.NewCA(t, "ca").WriteFiles(t, dir, "s", "localhost")
	for _, tc := range []struct {
		args     []string
		mentions string
	}{
		{[]string{"--tls-cert", f.Cert, "--tls-listen", ":0"}, "--tls-listen needs tls-cert and tls-key"},
		{[]string{"--tls-key", f.Key}, "--tls-key needs tls-cert too"},
		{[]string{"--tls-cert", f.Cert}, "--tls-cert needs tls-key too"},
		{[]string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-client-ca", f.CA}, "--tls-client-ca is set but there is no tls-listen"},
	} {
		if _, err := parseConfig(tc.args, envOf(nil)); err == nil || !strings.Contains(err.Error(), tc.mentions) {
			t.Errorf("parseConfig(%q): %v, want an error with %q", tc.args, err, tc.mentions)
		}
	}
	cfg, err := parseConfig([]string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-client-ca", f.CA, "--wss-listen", ":0"}, envOf(nil))
	if err != nil || cfg.TLSClientCA != f.CA || len(cfg.Listen) != 0 {
		t.Errorf("mutual TLS on wss only: %+v, %v", cfg, err)
	}
}
