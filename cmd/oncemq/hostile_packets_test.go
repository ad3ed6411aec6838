package main

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest/rawpacket"
	"github.com/oncemq/oncemq/session/reason"
)

// Hostile packets, each on one broker: 10,000 filters in one SUBSCRIBE (granted up to
// --max-subscriptions, 0x97 past it), 10,000 user properties, garbage, a huge declared length and
// a body sent one byte at a time. The broker answers each as the specification says, stays up and
// within its memory bounds.
func TestHostilePackets(t *testing.T) {
	b := startHostileBroker(t, "--packet-timeout", "2s")

	t.Run("10000 filters in one SUBSCRIBE", func(t *testing.T) {
		c := dialHostile(t, b.Addr, 5)
		c.connect(rawpacket.ConnectOptions{ClientID: "filters", CleanStart: true})
		pk := rawpacket.Subscribe(1, "f/0", 0)
		for i := 1; i < 10000; i++ {
			pk.Filters = append(pk.Filters, packets.Subscription{Filter: fmt.Sprintf("f/%d", i)})
		}
		if err := c.send(pk); err != nil {
			t.Fatal(err)
		}
		codes := c.expect(packets.Suback).ReasonCodes
		granted, quota := 0, 0
		for _, code := range codes {
			switch code {
			case 0:
				granted++
			case byte(reason.QuotaExceeded):
				quota++
			}
		}
		if len(codes) != 10000 || granted != 1000 || quota != 9000 {
			t.Errorf("SUBACK: %d codes, %d granted, %d quota exceeded; want 10000, 1000, 9000", len(codes), granted, quota)
		}
	})

	t.Run("10000 user properties", func(t *testing.T) {
		c := dialHostile(t, b.Addr, 5)
		c.connect(rawpacket.ConnectOptions{ClientID: "props", CleanStart: true})
		pk := rawpacket.Publish("props", 1, 1, []byte("x"), false)
		for i := range 10000 {
			pk.Properties.User = append(pk.Properties.User, packets.UserProperty{Key: "k", Val: fmt.Sprint(i)})
		}
		if err := c.send(pk); err != nil {
			t.Fatal(err)
		}
		if ack := c.expect(packets.Puback); ack.ReasonCode >= 0x80 {
			t.Errorf("PUBACK 0x%02X, want success", ack.ReasonCode)
		}
	})

	t.Run("garbage", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for range 20 {
			c := dialHostile(t, b.Addr, 5)
			junk := make([]byte, 4096)
			for i := range junk {
				junk[i] = byte(rng.UintN(256))
			}
			_, _ = c.nc.Write(junk)
			if !c.closedWithin(15 * time.Second) {
				t.Fatal("garbage: connection not closed")
			}
		}
	})

	t.Run("huge declared length", func(t *testing.T) {
		c := dialHostile(t, b.Addr, 5)
		c.connect(rawpacket.ConnectOptions{ClientID: "huge", CleanStart: true})
		_, _ = c.nc.Write([]byte{0x30, 0xFF, 0xFF, 0xFF, 0x7F}) // PUBLISH of 268,435,455 bytes
		pk, err := c.next(10 * time.Second)
		if err != nil || pk.FixedHeader.Type != packets.Disconnect || pk.ReasonCode != byte(reason.PacketTooLarge) {
			t.Fatalf("got %v %v, want DISCONNECT 0x95", rawpacket.Describe(pk), err)
		}
	})

	t.Run("slow body", func(t *testing.T) {
		c := dialHostile(t, b.Addr, 5)
		c.connect(rawpacket.ConnectOptions{ClientID: "slow", CleanStart: true})
		frame, _ := rawpacket.Encode(rawpacket.Publish("slow", 0, 0, make([]byte, 1000), false), 5)
		start := time.Now()
		for _, by := range frame {
			if _, err := c.nc.Write([]byte{by}); err != nil {
				break // closed: the packet deadline passed
			}
			time.Sleep(100 * time.Millisecond)
			if time.Since(start) > 20*time.Second {
				break
			}
		}
		if !c.closedWithin(5 * time.Second) {
			t.Fatal("a body sent one byte per 100 ms was not closed by the 2 s packet deadline")
		}
	})

	checkAfter(t, b)
}
