//! Bulk appends for readers that know their tables up front (Deep.data and other graph formats).
