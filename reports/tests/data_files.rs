//! The CSV writers: header from the schema's field names, one row per element, stable bytes.

use crate::common;

use std::fs;

use stampede_reports::{write_csv, AttemptRow, TimeseriesRow};

#[test]
fn timeseries_csv_has_the_schema_header_and_one_row_per_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let report = common::synthetic_report(3);
    let path = dir.path().join("timeseries.csv");
    write_csv(&path, &report.timeseries).unwrap();

    let mut reader = csv::Reader::from_path(&path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(&header[..3], ["t_ms", "attempts", "retries"]);
    assert!(header.iter().any(|h| h == "latency_p99_ms"));
    let back: Vec<TimeseriesRow> = reader.deserialize().map(|r| r.unwrap()).collect();
    assert_eq!(back, report.timeseries);

    let again = dir.path().join("again.csv");
    write_csv(&again, &report.timeseries).unwrap();
    assert_eq!(fs::read(&path).unwrap(), fs::read(&again).unwrap());
}

#[test]
fn attempts_csv_quotes_text_that_needs_it() {
    let dir = tempfile::tempdir().unwrap();
    let rows = vec![AttemptRow {
        seq: 1,
        tenant: "acme, inc \"east\"".into(),
        outcome: "429".into(),
        ..Default::default()
    }];
    let path = dir.path().join("attempts.csv");
    write_csv(&path, &rows).unwrap();
    let back: Vec<AttemptRow> = csv::Reader::from_path(&path)
        .unwrap()
        .deserialize()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(back, rows);
}

#[test]
fn writing_into_a_missing_folder_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-folder").join("timeseries.csv");
    let err = write_csv::<TimeseriesRow>(&path, &[]).unwrap_err();
    assert!(err.to_string().contains("timeseries.csv"), "{err}");
}

#[test]
fn run_data_files_read_back_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let report = common::synthetic_report(5);
    let attempts = vec![AttemptRow {
        seq: 1,
        at_ms: 10,
        outcome: "200".into(),
        ..Default::default()
    }];
    let files = stampede_reports::write_run_data(dir.path(), &report, &attempts).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "summary.json",
            "timeseries.csv",
            "attempts.csv",
            "tenants.csv",
            "metrics.prom"
        ]
    );
    assert_eq!(
        stampede_reports::read_summary(dir.path()).unwrap(),
        report.summary
    );
    let tenants: Vec<stampede_reports::TenantRow> = csv::Reader::from_path(&files[3])
        .unwrap()
        .deserialize()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(tenants, report.tenants);
}
