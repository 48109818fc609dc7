package dialect

import "github.com/retrytop/retrytop/model"

// contractFamilies are the families of the metric contract, the
// server-side families and the dialect extension families, by base name.
var contractFamilies = []string{
	model.MetricOriginals, model.MetricAttempts, model.MetricRetries, model.MetricRescued,
	model.MetricBudgetDenied, model.MetricAdmissionRejected, model.MetricResults,
	model.MetricActiveCalls, model.MetricConcurrencyLimit, model.MetricPoolWait,
	model.MetricRequestDuration, model.MetricAttemptDuration, model.MetricBackoff,
	model.MetricBudgetBalance, model.MetricPolicyMaxAttempts, model.MetricPolicyDeadline,
	model.MetricServerReceived, model.MetricServerServiceTime, model.MetricServerWorkAfterCancel,
	model.MetricRetryLimitExceeded, model.MetricRequestTimeouts, model.MetricPendingCalls,
	model.MetricPoolWaitAverage,
	model.MetricAbandonedAttempts, model.MetricLateSuccesses, model.MetricNestedOperations,
	model.MetricHedges, model.MetricHedgesWon, model.MetricHedgesAbandoned, model.MetricServerRequests, model.MetricOperationAttempts,
	model.MetricBreakerState,
}

// native is the metric contract itself (docs/metrics.md): the snapshot is
// stored as it is.
type native struct{}

func (native) Name() string       { return NameNative }
func (native) Families() []string { return nativeFamilies }

// nativeFamilies are the contract families plus the service-side families
// (model.ServiceFamilies) that analysis.Services reads. The service
// families are kept (Families, hence Translator.Filter) but do not make a
// target native (Detect): a target exporting only them is stored as is.
var nativeFamilies = append(append([]string{}, contractFamilies...), model.ServiceFamilies...)

// Detect: any family of the contract (or the server-side families) is
// present.
func (native) Detect(fams []model.Family) bool {
	r := index(fams)
	return r.has(contractFamilies...)
}

// Translate is the identity.
func (native) Translate(snap *model.Snapshot) *model.Snapshot { return snap }
