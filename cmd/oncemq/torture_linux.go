package main

import (
	"os/exec"
	"syscall"
)

// setChildAttrs makes the kernel kill the broker under test if the torture dies, so that no broker
// outlives it.
func setChildAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
