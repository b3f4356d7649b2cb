package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWaitingRoomDecode(t *testing.T) {
	base := "auth: {mode: header, trustedGateway: true}\nactivities:\n  a1:\n    waitingRoom: "
	tests := []struct {
		give    string
		want    WaitingRoom
		wantErr string
	}{
		{give: "{enabled: true, rate: 500}", want: func() WaitingRoom { w := DefaultWaitingRoom(); w.Enabled, w.Rate = true, 500; return w }()},
		{give: "{enabled: true, heartbeat: 3s, order: fifo, stockFactor: 1}", want: func() WaitingRoom {
			w := DefaultWaitingRoom()
			w.Enabled, w.Heartbeat, w.Order, w.StockFactor = true, Duration(3*time.Second), OrderFIFO, 1
			return w
		}()},
		{give: "{enabled: true, speed: 5}", wantErr: "speed"},
		{give: "{enabled: true, rate: 0}", wantErr: "activities.a1.waitingRoom.rate"},
		{give: "{enabled: true, heartbeat: 1s}", wantErr: "activities.a1.waitingRoom.heartbeat"},
		{give: "{enabled: true, heartbeat: 5}", wantErr: "duration"},
		{give: "{enabled: true, passTTL: 1h}", wantErr: "activities.a1.waitingRoom.passTTL"},
		{give: "{enabled: true, stockFactor: 0}", wantErr: "activities.a1.waitingRoom.stockFactor"},
		{give: "{enabled: true, order: lifo}", wantErr: "activities.a1.waitingRoom.order"},
		{give: "{enabled: true, prequeue: 48h}", wantErr: "activities.a1.waitingRoom.prequeue"},
	}
	for _, tt := range tests {
		c, err := Decode([]byte(base + tt.give + "\n"))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err %v, want one naming %q", tt.give, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrSyntax) {
				t.Errorf("%s: err %v wraps neither sentinel", tt.give, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.give, err)
			continue
		}
		got, on := c.WaitingRoom("a1")
		if !on || got != tt.want {
			t.Errorf("%s: got %+v on=%v, want %+v", tt.give, got, on, tt.want)
		}
	}
	c, err := Decode([]byte(base + "{enabled: false, rate: 5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, on := c.WaitingRoom("a1"); on {
		t.Error("a waiting room with enabled false is on")
	}
}
