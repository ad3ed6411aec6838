// Package torture checks the broker's promise the hard way: it runs the oncemq binary as a child
// process on a free loopback port and a fresh data directory, runs QoS 2 publishers and persistent
// subscribers that keep their own session state (they resend with DUP and the same ids, as MQTT
// asks), SIGKILLs the broker at random moments while messages flow and restarts it, drains, then
// counts per subscriber what was expected, delivered, lost and duplicated.
//
// Run is the library; Main is `oncemq torture`, its flags and its report on stdout.
package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Config is one torture run. DefaultConfig gives the defaults of `oncemq torture`.
type Config struct {
	Publishers          int
	Subscribers         int
	Messages            int // per publisher
	Window              int // QoS 2 PUBLISHes in flight per publisher
	Kills               int
	Seed                int64
	Timeout             time.Duration // the whole run
	DrainTimeout        time.Duration // the drain gives up after this long without progress
	Settle              time.Duration // quiet time at the end, for late redeliveries
	FinalKill           bool
	Sync                string // the broker's --sync: always or none
	Binary              string // the oncemq binary to run; required
	BrokerLogLevel      string
	TakeoverEvery       time.Duration // 0: no takeover subscribers
	TakeoverSubscribers int           // with TakeoverEvery > 0
	PayloadSize         int
	ReceiveMaximum      int  // the subscribers'
	QoS                 byte // the publishers' QoS: 1 or 2
	// PublisherAmnesia makes publishers lose their state at every kill, as a rebooting device
	// does: they reconnect with Clean Start and resend every message not completed (no PUBCOMP or
	// PUBACK) under new packet ids, with the same dedup id. Only the broker's dedup ids can then
	// keep them from being delivered twice.
	PublisherAmnesia bool
	// DedupOff passes --dedup-max 0 to the broker: no duplicate detection by dedup id.
	DedupOff bool
	// Shared, when > 0, replaces the plain subscribers by that many members of one shared
	// subscription group; the group must receive every message exactly once (shared.go).
	Shared int
	// LeaveEvery is about how often a member leaves the group gracefully and comes back (with
	// Shared >= 2; 0: never).
	LeaveEvery time.Duration
	Keep       bool // keep the temporary directory even if the run passes
	// Progress receives one line per event (start, kills, end of publishing); nil discards them.
	Progress io.Writer
}

// DefaultConfig is the configuration of `oncemq torture` without flags, less Seed and Binary.
func DefaultConfig() Config {
	return Config{
		Publishers: 4, Subscribers: 2, Messages: 2000, Window: 16, Kills: 10,
		Timeout: 10 * time.Minute, DrainTimeout: 30 * time.Second, Settle: 500 * time.Millisecond,
		FinalKill: true, Sync: "always", BrokerLogLevel: "warn", TakeoverSubscribers: 1,
		PayloadSize: 16, ReceiveMaximum: 64, QoS: 2, LeaveEvery: 400 * time.Millisecond,
	}
}

// Validate checks the bounds of every field except Binary; its messages name the flags.
func (c Config) Validate() error {
	switch {
	case c.Publishers < 1:
		return errors.New("--publishers must be at least 1")
	case c.Subscribers < 0:
		return errors.New("--subscribers must not be negative")
	case c.Shared < 0 || c.LeaveEvery < 0:
		return errors.New("--shared and --leave-every must not be negative")
	case c.Shared > 0 && c.TakeoverEvery > 0:
		return errors.New("--shared and --takeover-every cannot be combined")
	case c.Subscribers == 0 && c.TakeoverEvery <= 0 && c.Shared == 0:
		return errors.New("no subscriber: --subscribers 0 needs --takeover-every or --shared")
	case c.Messages < 1:
		return errors.New("--messages must be at least 1")
	case c.Window < 1 || c.Window > 65535:
		return errors.New("--window must be from 1 to 65535")
	case c.Kills < 0:
		return errors.New("--kills must not be negative")
	case c.Timeout <= 0 || c.DrainTimeout <= 0 || c.Settle < 0:
		return errors.New("--timeout and --drain-timeout must be positive, --settle not negative")
	case c.TakeoverEvery < 0:
		return errors.New("--takeover-every must not be negative")
	case c.TakeoverEvery > 0 && c.TakeoverSubscribers < 1:
		return errors.New("--takeover-subscribers must be at least 1")
	case c.PayloadSize < payloadHeader || c.PayloadSize > 1<<20:
		return fmt.Errorf("--payload must be from %d to %d bytes", payloadHeader, 1<<20)
	case c.ReceiveMaximum < 1 || c.ReceiveMaximum > 65535:
		return errors.New("--receive-maximum must be from 1 to 65535")
	case c.QoS != 1 && c.QoS != 2:
		return errors.New("--qos must be 1 or 2")
	case c.Sync != "always" && c.Sync != "none":
		return fmt.Errorf("invalid value %q for flag --sync: want always or none", c.Sync)
	}
	if _, err := parseLogLevel(c.BrokerLogLevel); err != nil {
		return fmt.Errorf("invalid value %q for flag --broker-log-level: %v", c.BrokerLogLevel, err)
	}
	return nil
}

// KillRecord is one SIGKILL of the broker.
type KillRecord struct {
	N          int     `json:"n"`
	AtSeconds  float64 `json:"at_seconds"`
	Progress   int64   `json:"progress"`
	DownMillis float64 `json:"down_ms"` // from SIGKILL to accepting connections again
	Final      bool    `json:"final,omitempty"`
}

// Report is the result of a run: the printed report and the JSON report (--json) are made of it.
type Report struct {
	Pass     bool     `json:"pass"`
	Failures []string `json:"failures,omitempty"`
	Warnings []string `json:"warnings,omitempty"`

	Seed                int64   `json:"seed"`
	Publishers          int     `json:"publishers"`
	Subscribers         int     `json:"subscribers"`
	TakeoverSubscribers int     `json:"takeover_subscribers"`
	TakeoverEvery       string  `json:"takeover_every,omitempty"`
	MessagesPerPub      int     `json:"messages_per_publisher"`
	Window              int     `json:"window"`
	PayloadSize         int     `json:"payload_bytes"`
	Sync                string  `json:"sync"`
	QoS                 byte    `json:"qos"`
	PublisherAmnesia    bool    `json:"publisher_amnesia,omitempty"`
	DedupOff            bool    `json:"dedup_off,omitempty"`
	Shared              int     `json:"shared_members,omitempty"`
	LeaveEvery          string  `json:"leave_every,omitempty"`
	Binary              string  `json:"binary"`
	KillsRequested      int     `json:"kills_requested"`
	Kills               int     `json:"kills"`
	Restarts            int     `json:"restarts"`
	BrokerDied          string  `json:"broker_died,omitempty"`
	DurationSeconds     float64 `json:"duration_seconds"`
	PublishSeconds      float64 `json:"publish_seconds"`
	DrainSeconds        float64 `json:"drain_seconds"`         // from the publishers' end to the last first delivery
	MessagesPerSecond   float64 `json:"messages_per_second"`   // acknowledged publishes / publish time
	DeliveriesPerSecond float64 `json:"deliveries_per_second"` // counted deliveries / (publish + drain seconds)
	TempDir             string  `json:"temp_dir,omitempty"`    // kept: data and broker.log

	Totals          SubscriberResult   `json:"totals"`
	SubscriberLines []SubscriberResult `json:"subscriber_results"`
	PublisherLines  []PublisherResult  `json:"publisher_results"`
	KillLog         []KillRecord       `json:"kill_log"`
	BrokerLogTail   string             `json:"broker_log_tail,omitempty"`
}

// Run performs one torture run and returns its report; it never panics on a failing broker. ctx
// ending interrupts the run, which then fails. An invalid cfg makes a failed report naming why.
func Run(ctx context.Context, cfg Config) Report {
	if cfg.TakeoverEvery <= 0 {
		cfg.TakeoverSubscribers = 0
	}
	if cfg.Shared > 0 {
		cfg.Subscribers = 0
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	t := &torture{cfg: cfg, out: cfg.Progress}
	err := cfg.Validate()
	if err == nil && cfg.Binary == "" {
		err = errors.New("no broker binary to run (Config.Binary)")
	}
	if err != nil {
		t.start = time.Now()
		t.fail("invalid configuration: %v", err)
		return *t.finish(t.newReport(), nil, nil, nil, "")
	}
	return *t.run(ctx)
}
