package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// outputDir makes the folder a command writes its results into: dir if given (created if
// missing), else a new folder under the system's temp folder. There is no fixed default path, so
// that two runs, or two people on one machine, never write over each other's results. It is made
// before the measuring starts, so that a folder that cannot be written fails the command at once
// rather than after a long run.
func outputDir(dir, command string) (string, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("--out: %w", err)
		}
		return dir, nil
	}
	dir, err := os.MkdirTemp("", "oncemq-bench-"+command+"-")
	if err != nil {
		return "", fmt.Errorf("results folder: %w", err)
	}
	return dir, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// saveResult writes res as JSON into dir/name and says where.
func saveResult(con console, dir, name string, res any) error {
	path := filepath.Join(dir, name)
	if err := writeJSON(path, res); err != nil {
		return err
	}
	fmt.Fprintf(con.out, "result written to %s\n", path)
	return nil
}
