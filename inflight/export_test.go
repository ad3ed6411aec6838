package inflight

import (
	"path/filepath"
	"sync"
)

// Exports for package inflight_test: the power-loss disk of powerdisk_test.go under a whole broker
// of package mqtt (powerloss_mqtt_test.go), which package inflight's own tests cannot import. This
// file is compiled only into the test binary of this directory; it sets testWAL at init, so that
// a journal opened at a data file with a PowerDisk installed writes its log through it.

// powerDisks are the installed disks, by data file path.
var powerDisks sync.Map

func init() {
	testWAL = func(path string) (walOptions, bool) {
		if d, ok := powerDisks.Load(filepath.Clean(path)); ok {
			return d.(*PowerDisk).wal, true
		}
		return walOptions{}, false
	}
}

// PowerDisk is the log's disk of the journal opened at one data file: it records the writes and
// syncs of the log and copies the bbolt file after each of its commits, and loses power when
// armed. See powerdisk_test.go.
type PowerDisk struct {
	r    *recorder
	path string
	wal  walOptions
}

// InstallPowerDisk makes the journals opened at dataFile, until Remove, write their log through a
// new PowerDisk, with a checkpoint into bbolt every checkpointRecords log records, so that a short
// run crosses many checkpoints.
func InstallPowerDisk(dataFile string, checkpointRecords int) *PowerDisk {
	r := newRecorder(false)
	d := &PowerDisk{r: r, path: filepath.Clean(dataFile), wal: walOptions{
		openFile:     r.open,
		onBoltCommit: r.snapshot,
		maxRecords:   checkpointRecords,
		maxBytes:     64 << 10,
	}}
	powerDisks.Store(d.path, d)
	return d
}

// Remove uninstalls the disk: the next journal opened at its data file writes the real log.
func (d *PowerDisk) Remove() { powerDisks.Delete(d.path) }

// Arm counts the log's syncs and written bytes from now on, and loses power when the atSync-th
// sync starts (it never completes) or once atByte bytes are written (the write is torn there);
// 0 disables a trigger.
func (d *PowerDisk) Arm(atSync int, atByte int64) { d.r.arm(atSync, atByte) }

// Counts returns the syncs and bytes since Arm.
func (d *PowerDisk) Counts() (syncs int, bytes int64) { return d.r.counts() }

// Lost is closed when power is lost.
func (d *PowerDisk) Lost() <-chan struct{} { return d.r.lost }

// LoseNow loses power now, unless it is lost already.
func (d *PowerDisk) LoseNow(what string) { d.r.loseNow(what) }

// Release makes every write and sync of the log after the loss, which waited, fail with EIO, so
// that the journal fails and its broker can be closed.
func (d *PowerDisk) Release() { d.r.release() }

// Loss describes the loss: the event it cut, the bbolt commits completed before it, and the bytes
// written to the log after its last sync.
func (d *PowerDisk) Loss() (what string, checkpoints, unsynced int) {
	st, _ := d.r.lossState()
	for _, f := range st.logs {
		unsynced += len(f.unsynced)
	}
	return st.what, st.snapshot, unsynced
}

// WriteLoss writes the files the loss left, as the data file dataFile and its log beside it: the
// bbolt copy of the last commit before the loss, and each log segment as its last sync covered it
// plus the first keep bytes written after that sync.
func (d *PowerDisk) WriteLoss(dataFile string, keep int) error {
	st, snapshot := d.r.lossState()
	_, err := st.writeFiles(dataFile, snapshot, keep)
	return err
}

// LogBuffer collects a broker's log output, safe for concurrent writes (helpers_test.go).
type LogBuffer = logBuffer
