//go:build !linux

package childproc

import "os/exec"

// setAttrs: only Linux can have the kernel kill the child when its parent dies.
func setAttrs(cmd *exec.Cmd) {}
