package rpc

import "testing"

func TestHealthCheck(t *testing.T) {

}
