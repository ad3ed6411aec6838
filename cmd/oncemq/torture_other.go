//go:build !linux

package main

import "os/exec"

// setChildAttrs: only Linux can have the kernel kill the child when the torture dies.
func setChildAttrs(cmd *exec.Cmd) {}
