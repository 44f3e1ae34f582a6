package main

import (
	"context"
	"errors"
	"io"
)

func runScale(ctx context.Context, f flags, addr string, progress io.Writer) error {
	return errors.New("scale: scheduler not built yet")
}

func runScaleChild(ctx context.Context, f flags) error {
	return errors.New("scale: scheduler not built yet")
}
