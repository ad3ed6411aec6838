package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Markers around README's table of settings, which settingsTable generates.
const (
	tableStart = "<!-- settings table: generated from serve's options; TestREADMESettingsTable prints it -->"
	tableEnd   = "<!-- end of settings table -->"
)

// settingsTable is README's table of every setting of serve, one row per option: flag,
// variable, config file key, default, meaning.
func settingsTable() string {
	var b strings.Builder
	b.WriteString("| flag | variable | file key | default | meaning |\n|---|---|---|---|---|\n")
	for _, o := range options {
		def := ""
		if o.def != "" {
			def = "`" + o.def + "`"
		}
		key := "`" + o.flag + ":`"
		if o.flag == "config" {
			key = "(none)"
		}
		help := strings.ReplaceAll(strings.ReplaceAll(o.help, "\n", " "), "|", `\|`)
		if o.repeatable() {
			help += "; repeatable: flag repeated, variable comma-separated, key a YAML list"
		}
		flag := "--" + o.flag
		if o.arg != "" { // a boolean has no ARG
			flag += " " + strings.TrimSuffix(o.arg, "...")
		}
		b.WriteString("| `" + flag + "` | `" + o.env + "` | " + key + " | " + def + " | " + help + " |\n")
	}
	return b.String()
}

// README's table lists every setting as the options table has it, so that it never drifts. On a
// difference the test prints the table to paste between the markers.
func TestREADMESettingsTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), tableStart+"\n")
	table, _, ok2 := strings.Cut(rest, tableEnd)
	if !ok || !ok2 {
		t.Fatalf("README.md has no settings table between %q and %q", tableStart, tableEnd)
	}
	if want := settingsTable(); table != want {
		t.Errorf("README.md's settings table is not the options table; put this between the markers:\n%s", want)
	}
	for _, o := range options {
		if !strings.Contains(table, "`--"+o.flag) || !strings.Contains(table, "`"+o.env+"`") {
			t.Errorf("README.md's settings table lacks --%s", o.flag)
		}
	}
}
