package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Dockerfile builds in principle (docker is not on the test machines): the files it copies
// from the repository exist, the config it runs with is where it copies it and starts the broker,
// the port it exposes is the one that config listens on, and no ONCEMQ_ listener variable would
// beat the listeners of a mounted config file.
func TestDockerfile(t *testing.T) {
	root := filepath.Join("..", "..")
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var stages int
	var copied, cmd, expose string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch fields[0] {
		case "FROM":
			stages++
		case "COPY":
			if !strings.HasPrefix(fields[1], "--from=") {
				for _, src := range fields[1 : len(fields)-1] {
					if _, err := os.Stat(filepath.Join(root, src)); err != nil {
						t.Errorf("Dockerfile copies %s from the repository: %v", src, err)
					}
					if src == "cmd/oncemq/docker.yaml" {
						copied = fields[len(fields)-1]
					}
				}
			}
		case "ENV":
			if strings.Contains(line, "LISTEN") {
				t.Errorf("Dockerfile sets a listener variable, which would beat a mounted config file: %s", line)
			}
		case "EXPOSE":
			expose = strings.Join(fields[1:], " ")
		case "CMD":
			cmd = strings.TrimSpace(strings.TrimPrefix(line, "CMD"))
		}
	}
	var argv []string
	if err := json.Unmarshal([]byte(cmd), &argv); err != nil || len(argv) != 3 || argv[0] != "serve" || argv[1] != "--config" {
		t.Fatalf("CMD %s, want [\"serve\", \"--config\", FILE] (%v)", cmd, err)
	}
	if stages != 2 || copied == "" || argv[2] != copied || expose != "1883 9100" {
		t.Fatalf("stages %d, config copied to %q, CMD's config %q, EXPOSE %q; want 2 stages, the copied config in CMD, 1883 9100",
			stages, copied, argv[2], expose)
	}

	// The image's config parses and starts the broker; flags beat its listener and data folder.
	config, err := filepath.Abs(filepath.Join(root, "cmd", "oncemq", "docker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(config); err != nil || !strings.Contains(string(b), "listen: :1883\n") {
		t.Fatalf("%s does not listen on :1883 (%v)", config, err)
	}
	startBroker(t, t.TempDir(), nil, "--config", config)
}
