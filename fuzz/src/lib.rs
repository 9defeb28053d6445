//! Fuzz targets (see issue tracker): not yet written.
