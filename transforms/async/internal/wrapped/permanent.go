package wrapped

// Errors that must not be retried.

// PermanentError marks an error that must not be retried.
type PermanentError struct{ err error }

func (p *PermanentError) Error() string { return p.err.Error() }

func (p *PermanentError) Unwrap() error { return p.err }

// PermanentOf marks err as permanent (see async.Permanent); nil stays nil.
func PermanentOf(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{err: err}
}
