package dialect

import "github.com/retrytop/retrytop/model"

// The AWS SDKs' client call metrics (aws-sdk-go-v2 through smithy-go's
// metrics and its OpenTelemetry adapter; the .NET, Java and Kotlin SDKs
// name them alike, Kotlin with a smithy. prefix), as the OTel Prometheus
// exporter writes them: client.call.duration (s, one per operation, its
// retries and backoff included), client.call.attempts ({attempt}, one per
// try), each with rpc.service and rpc.method. The AWS service (rpc.service: "DynamoDB",
// "S3") is the dependency; operations are summed.
//
// client.call.errors ({error}, with exception.type) is not read: whether
// it counts failed tries or failed operations is not documented, and
// either reading would make up an outcome split. Attempts therefore have
// no outcome, and retries are unknown (attempts over originals is the
// amplification). client.call.attempt_duration has no outcome either and
// is not read.
const (
	awsDuration    = "client_call_duration_seconds"
	awsAttempts    = "client_call_attempts_total"
	awsSmithy      = "smithy_" // the Kotlin SDK's prefix
	awsServiceLbl  = "rpc_service"
	awsMethodLbl   = "rpc_method"
	awsExceptionLb = "exception_type"
)

type awsSDK struct{}

func (awsSDK) Name() string { return NameAWSSDK }

func (awsSDK) Families() []string {
	return []string{awsDuration, awsAttempts, awsSmithy + awsDuration, awsSmithy + awsAttempts}
}

// Detect: the attempts counter, in either naming.
func (awsSDK) Detect(fams []model.Family) bool {
	return index(fams).has(awsAttempts, awsSmithy+awsAttempts)
}

func (awsSDK) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	each := func(f *model.Family, fn func(s *model.Sample, ls model.Labels)) {
		if f == nil {
			return
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			if svc := s.Labels.Get(awsServiceLbl); svc != "" {
				fn(s, relabel(s.Labels, svc, awsServiceLbl, awsMethodLbl, awsExceptionLb))
			}
		}
	}
	// Originals: one call duration per operation, when it ends.
	calls := r.first(awsDuration, awsSmithy+awsDuration)
	each(calls, func(s *model.Sample, ls model.Labels) {
		o.counter(model.MetricOriginals, ls, scalar(calls, s))
		if calls.Type == model.Histogram {
			o.histogram(model.MetricRequestDuration, ls, s, 1)
		}
	})
	// Attempts: one per try, first tries included, without an outcome.
	att := r.first(awsAttempts, awsSmithy+awsAttempts)
	each(att, func(s *model.Sample, ls model.Labels) {
		o.counter(model.MetricAttempts, ls, scalar(att, s))
	})
	return o.snapshot(snap)
}
