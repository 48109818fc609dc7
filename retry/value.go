package retry

import "context"

// DoValue is Owner.Do for an attempt that returns a value: it returns the
// value of the attempt that succeeded, or T's zero value and the Owner's
// *Error. Every rule of Do applies. A value returned with an error, or by
// an attempt that succeeded too late (abandoned, or after the caller gave
// up), is dropped: only the attempt Do accepted as the operation's success
// provides the result.
func DoValue[T any](ctx context.Context, o *Owner, p Priority, attempt func(ctx context.Context) (T, error)) (T, error) {
	v, err := o.do(ctx, p, func(actx context.Context) error {
		v, err := attempt(actx)
		if err == nil {
			// Kept on the attempt itself, never in a shared variable: an
			// abandoned attempt may still return while Do's caller reads
			// the result of another.
			actx.(*attemptCtx).val = v
		}
		return err
	}, o.inline, true)
	t, _ := v.(T)
	if err != nil {
		var zero T
		return zero, err
	}
	return t, nil
}
