package projectdata

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestBudgetContextEndsAtItsDeadline(t *testing.T) {
	is := is.New(t)
	b, release := withBudget(context.Background(), 20*time.Millisecond)
	defer release()
	is.NoErr(b.Err()) // within the budget
	d, ok := b.Deadline()
	is.True(ok)
	is.True(time.Until(d) <= 20*time.Millisecond)
	<-b.Done() // the timer Done makes closes it at the deadline
	is.Equal(b.Err(), context.DeadlineExceeded)

	// Polled without Done, Err reports the end all the same.
	polled, release2 := withBudget(context.Background(), time.Millisecond)
	defer release2()
	for polled.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	is.Equal(polled.Err(), context.DeadlineExceeded)
	is.True(polled.timed == nil) // no timer was made
}

func TestBudgetContextEndsWithItsParentAndWhenReleased(t *testing.T) {
	is := is.New(t)
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), idempotencyKey{}, "v"))
	b, release := withBudget(parent, time.Hour)
	defer release()
	is.Equal(b.Value(idempotencyKey{}), "v") // values are the parent's
	cancel()
	is.Equal(b.Err(), context.Canceled)
	<-b.Done()

	early, cancelEarly := context.WithDeadline(context.Background(), time.Now().Add(time.Minute))
	defer cancelEarly()
	b2, release2 := withBudget(early, time.Hour)
	d, _ := b2.Deadline()
	want, _ := early.Deadline()
	is.Equal(d, want) // the parent's deadline comes first

	release2() // released before anyone asked for Done
	is.Equal(b2.Err(), context.Canceled)
	<-b2.Done()

	b3, release3 := withBudget(context.Background(), time.Hour)
	done := b3.Done() // a timer, then released
	release3()
	<-done
	is.Equal(b3.Err(), context.Canceled)
}
