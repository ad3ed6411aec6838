package serve

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// configDir holds the example config files, shared with the binary's tests.
var configDir = filepath.Join("..", "..", "..", "..", "testdata", "config")

func configFile(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(configDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// withCerts makes a working directory with certs/server.pem, certs/server-key.pem and
// certs/ca.pem, the files full.yaml names.
func withCerts(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("certs", 0o700); err != nil {
		t.Fatal(err)
	}
	f := mqtttest.NewCA(t, "oncemq test CA").WriteFiles(t, "certs", "server", "localhost")
	if err := os.Rename(f.CA, filepath.Join("certs", "ca.pem")); err != nil {
		t.Fatal(err)
	}
}

// Every key of the file sets its setting; a list sets a repeatable one several times.
func TestConfigFileSetsEverything(t *testing.T) {
	full := configFile(t, "full.yaml")
	withCerts(t)
	cfg, err := parseConfig([]string{"--config", full}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := withDefaults(config{
		Listen: []string{"127.0.0.1:0", "[::1]:0"}, TLSListen: []string{"127.0.0.1:0"},
		WSListen: []string{"127.0.0.1:0"}, WSSListen: []string{"127.0.0.1:0"},
		TLSCert: "certs/server.pem", TLSKey: "certs/server-key.pem", TLSClientCA: "certs/ca.pem",
		ConfigFile: full, DataDir: "state", Sync: "none", LogLevel: slog.LevelDebug, MaxQueued: 500,
	})
	if cfg.origin["tls-cert"] != full+":10" {
		t.Errorf("origin of tls-cert: %q, want the file and line 10", cfg.origin["tls-cert"])
	}
	cfg.origin = nil
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("from full.yaml:\n got  %+v\n want %+v", cfg, want)
	}
}

// A flag wins over the environment, which wins over the file, setting by setting; a value the file
// gives and something else overrides is not even checked.
func TestConfigFilePrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oncemq.yaml")
	yaml := "listen: [127.0.0.1:1, 127.0.0.1:2]\nsync: none\nmax-queued: 7\ndata: from-file\nlog-level: loud\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := envOf(map[string]string{"ONCEMQ_CONFIG": path, "ONCEMQ_MAX_QUEUED": "8", "ONCEMQ_DATA": "from-env", "ONCEMQ_LOG_LEVEL": "warn"})
	cfg, err := parseConfig([]string{"--data", "from-flag"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Listen, []string{"127.0.0.1:1", "127.0.0.1:2"}) || cfg.Sync != "none" || cfg.MaxQueued != 8 ||
		cfg.DataDir != "from-flag" || cfg.LogLevel != slog.LevelWarn {
		t.Errorf("got listen %q sync %s max-queued %d data %s log-level %v; want the file's listen and sync, "+
			"the environment's max-queued and log-level, the flag's data", cfg.Listen, cfg.Sync, cfg.MaxQueued, cfg.DataDir, cfg.LogLevel)
	}
}

// Each mistake in a config file stops start-up with the file, the line and what is wrong.
func TestConfigFileRefusals(t *testing.T) {
	tests := []struct {
		file     string
		line     int
		mentions []string
	}{
		{"unknown-key.yaml", 3, []string{"unknown key", `"tls-certs"`}},
		{"bad-value.yaml", 4, []string{`"sometimes"`, "sync", "always or none"}},
		{"missing-cert.yaml", 2, []string{"tls-cert", "no-such-dir/server.pem", "no such file"}},
		{"tls-listen-without-cert.yaml", 3, []string{"wss-listen", "needs tls-cert and tls-key"}},
		{"list-for-one-value.yaml", 2, []string{"sync", "one value, not a list"}},
		{"duplicate-key.yaml", 3, []string{"sync", "already set on line 1"}},
		{"not-a-mapping.yaml", 1, []string{"want a mapping"}},
		{"bad-listen-item.yaml", 3, []string{"listen", `"127.0.0.1"`, "host:port"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := configFile(t, tt.file)
			_, err := parseConfig([]string{"--config", path}, envOf(nil))
			if err == nil {
				t.Fatalf("%s accepted", tt.file)
			}
			msg := err.Error()
			if at := path + ":" + strconv.Itoa(tt.line) + ":"; !strings.Contains(msg, at) {
				t.Errorf("error %q does not name %s", msg, at)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("error %q does not mention %s", msg, m)
				}
			}
		})
	}
}

// A missing config file, an empty one, and YAML that does not parse.
func TestConfigFileUnreadable(t *testing.T) {
	dir := t.TempDir()
	if _, err := parseConfig([]string{"--config", filepath.Join(dir, "nope.yaml")}, envOf(nil)); err == nil ||
		!strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("missing file: %v, want an error naming it", err)
	}
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, []byte("# nothing set\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := parseConfig([]string{"--config", empty}, envOf(nil)); err != nil || cfg.Sync != "always" {
		t.Errorf("empty file: %+v, %v; want the defaults", cfg, err)
	}
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte("sync: none\nlisten: [127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parseConfig([]string{"--config", broken}, envOf(nil)); err == nil ||
		!strings.Contains(err.Error(), "broken.yaml") || !strings.Contains(err.Error(), "line") {
		t.Errorf("bad YAML: %v, want an error naming the file and a line", err)
	}
	nested := filepath.Join(dir, "nested.yaml")
	if err := os.WriteFile(nested, []byte("config: other.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parseConfig([]string{"--config", nested}, envOf(nil)); err == nil || !strings.Contains(err.Error(), "nested.yaml:1:") {
		t.Errorf("config key in a config file: %v, want it refused with its line", err)
	}
}

// Every option is a key of the config file: a file that sets each one to its default, or to an
// address for a listener, is accepted. Settings added to the table later are keys with no more
// work, and this test covers them.
func TestEveryOptionIsAConfigKey(t *testing.T) {
	withCerts(t)
	var b strings.Builder
	for _, o := range options {
		switch {
		case o.flag == "config":
			continue
		case o.def != "":
			b.WriteString(o.flag + ": " + o.def + "\n")
		case o.repeatable():
			b.WriteString(o.flag + ": [127.0.0.1:0]\n")
		}
	}
	b.WriteString("tls-cert: certs/server.pem\ntls-key: certs/server-key.pem\n")
	if err := os.WriteFile("all.yaml", []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parseConfig([]string{"--config", "all.yaml"}, envOf(nil)); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
}
