package mqtt

import "syscall"

// errTooManyFiles is accept's error when the process is out of file descriptors: temporary.
var errTooManyFiles = syscall.EMFILE
