package dialect

import "testing"

// grpc-go's code names and the canonical ones map onto each other, so the
// PromQL matchers (gpGoName) and Translate (gpCanonical) agree.
func TestGRPCPrometheusCodeNames(t *testing.T) {
	for _, tc := range []struct{ goName, canonical string }{
		{"OK", "OK"}, {"Canceled", "CANCELLED"}, {"Unknown", "UNKNOWN"}, {"InvalidArgument", "INVALID_ARGUMENT"},
		{"DeadlineExceeded", "DEADLINE_EXCEEDED"}, {"NotFound", "NOT_FOUND"}, {"AlreadyExists", "ALREADY_EXISTS"},
		{"PermissionDenied", "PERMISSION_DENIED"}, {"ResourceExhausted", "RESOURCE_EXHAUSTED"},
		{"FailedPrecondition", "FAILED_PRECONDITION"}, {"Aborted", "ABORTED"}, {"OutOfRange", "OUT_OF_RANGE"},
		{"Unimplemented", "UNIMPLEMENTED"}, {"Internal", "INTERNAL"}, {"Unavailable", "UNAVAILABLE"},
		{"DataLoss", "DATA_LOSS"}, {"Unauthenticated", "UNAUTHENTICATED"}, {"14", "14"},
	} {
		if got := gpCanonical(tc.goName); got != tc.canonical {
			t.Errorf("gpCanonical(%q) = %q, want %q", tc.goName, got, tc.canonical)
		}
		if got := gpGoName(tc.canonical); got != tc.goName {
			t.Errorf("gpGoName(%q) = %q, want %q", tc.canonical, got, tc.goName)
		}
	}
}
