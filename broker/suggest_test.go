package broker

import (
	"slices"
	"testing"
)

func TestNearest(t *testing.T) {
	for _, tc := range []struct {
		s     string
		names []string
		want  []string
	}{
		{"orders.dql", []string{"orders.dlq", "orders", "payments.dlq"}, []string{"orders.dlq"}},
		{"body.ammount", []string{"body.amount", "body.currency", "body.amounts"}, []string{"body.amount", "body.amounts"}},
		{"zzz", []string{"orders.dlq"}, nil},
		{"orders", []string{"orders"}, nil},
	} {
		if got := Nearest(tc.s, tc.names, 3); !slices.Equal(got, tc.want) {
			t.Errorf("Nearest(%q): got %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestIsFailureHeader(t *testing.T) {
	for k, want := range map[string]bool{
		"x-exception-message": true, "x-exception-stacktrace": true, "MT-Fault-Message": true, "mt-fault-exceptiontype": true,
		"NServiceBus.ExceptionInfo.Message": true, "x-death": false, "tenant": false, "MT-Host-Machine": false, "x-exception": false,
	} {
		if got := IsFailureHeader(k); got != want {
			t.Errorf("IsFailureHeader(%q) = %v, want %v", k, got, want)
		}
	}
}
