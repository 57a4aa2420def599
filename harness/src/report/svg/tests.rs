use super::*;

#[test]
fn escapes_text() {
    assert_eq!(
        esc("<script>alert('x')</script> & \""),
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;"
    );
}

#[test]
fn frontier_keeps_undominated_points() {
    let pts = [(1.0, 0.9), (2.0, 0.5), (3.0, 0.6), (4.0, 0.1)];
    assert_eq!(
        frontier(&pts, Frontier::Lower),
        vec![(1.0, 0.9), (2.0, 0.5), (4.0, 0.1)]
    );
    // Toward 2.0: 1.5 (distance 0.5) beats 3.0 (distance 1.0) at higher cost.
    let pts = [(1.0, 3.0), (2.0, 1.5), (3.0, 2.1)];
    assert_eq!(
        frontier(&pts, Frontier::Toward(2.0)),
        vec![(1.0, 3.0), (2.0, 1.5), (3.0, 2.1)]
    );
}

#[test]
fn axes_cover_the_data_with_readable_ticks() {
    let ((lo, hi), ticks) = axis(Scale::Linear, 1.93, 3.41, false);
    assert!(lo <= 1.93 && hi >= 3.41, "{lo} {hi}");
    assert!(ticks.len() >= 3 && ticks.len() <= 11, "{ticks:?}");
    let (_, ticks) = axis(Scale::Log2, 1.0, 64.0, false);
    assert_eq!(ticks, vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]);
    let ((lo, hi), _) = axis(Scale::Linear, 0.0, 0.0, true);
    assert!(lo == 0.0 && hi > 0.0);
    assert_eq!(tick_label(0.25), "0.25");
    assert_eq!(tick_label(16.0), "16");
    assert_eq!(tick_label(0.125), "0.125");
    assert_eq!(tick_label(0.0625), "0.0625");
    assert_eq!(tick_label(0.2), "0.2");
}

#[test]
fn chart_escapes_labels_and_skips_non_finite_points() {
    let c = Chart {
        title: "<b>t</b>".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        x_scale: Scale::Log2,
        y_scale: Scale::Linear,
        y_zero: false,
        series: vec![Series {
            name: "s".into(),
            color: "#000".into(),
            points: vec![
                Point {
                    x: 1.0,
                    y: 2.0,
                    lo: Some(1.5),
                    hi: Some(2.5),
                    tip: "<i>".into(),
                },
                Point {
                    x: 2.0,
                    y: f64::INFINITY,
                    lo: None,
                    hi: None,
                    tip: String::new(),
                },
            ],
            line: true,
            band: true,
            marker: Marker::Circle,
        }],
        hlines: vec![],
        frontier: Some(Frontier::Lower),
        x_hint: None,
        message: None,
    };
    let svg = c.render();
    assert!(svg.contains("&lt;b&gt;t&lt;/b&gt;") && !svg.contains("<b>"));
    assert!(svg.contains("&lt;i&gt;") && !svg.contains("<i>"));
    assert!(!svg.contains("NaN") && !svg.contains("inf"));
    // One marker (the infinite point is skipped), ringed as the whole frontier.
    assert_eq!(svg.matches("r=\"3.2\"").count(), 1);
    assert_eq!(svg.matches("r=\"7.5\"").count(), 1);
}
