use super::layout::thin;
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
        key: false,
    };
    let svg = c.render();
    assert!(svg.contains("&lt;b&gt;t&lt;/b&gt;") && !svg.contains("<b>"));
    assert!(svg.contains("&lt;i&gt;") && !svg.contains("<i>"));
    assert!(!svg.contains("NaN") && !svg.contains("inf"));
    // One marker (the infinite point is skipped), ringed as the whole frontier.
    assert_eq!(svg.matches("r=\"3.2\"").count(), 1);
    assert_eq!(svg.matches("r=\"7.5\"").count(), 1);
}

/// A chart with one series through `points` on the given axes, reference lines at `refs`.
fn chart(x_scale: Scale, y_scale: Scale, points: &[(f64, f64)], refs: &[f64]) -> Chart {
    Chart {
        title: "3gram-ser-long-task-name: tokens/s relative to AR vs steps".into(),
        x_label: "sampling steps (log scale)".into(),
        y_label: "tokens/s relative to AR (log)".into(),
        x_scale,
        y_scale,
        y_zero: false,
        series: vec![Series {
            name: "oracle · ddpm_cache".into(),
            color: PALETTE[0].into(),
            points: points
                .iter()
                .map(|&(x, y)| Point {
                    x,
                    y,
                    lo: None,
                    hi: None,
                    tip: String::new(),
                })
                .collect(),
            line: true,
            band: false,
            marker: Marker::Circle,
        }],
        hlines: refs
            .iter()
            .map(|&y| HLine {
                y,
                band: None,
                label: "AR".into(),
                color: "#666".into(),
                dash: "6 3",
                text: format!("AR {y}"),
            })
            .collect(),
        frontier: None,
        x_hint: None,
        message: None,
        key: false,
    }
}

/// Every pair of text boxes of `c` apart, and every box inside the SVG.
fn assert_labels_apart(c: &Chart) {
    let (boxes, (w, h)) = c.text_boxes();
    for (i, (a, ra)) in boxes.iter().enumerate() {
        assert!(ra.inside(w, h), "{a:?} {ra:?} leaves the {w}×{h} SVG");
        for (b, rb) in &boxes[i + 1..] {
            assert!(!ra.intersects(rb), "{a:?} {ra:?} overlaps {b:?} {rb:?}");
        }
    }
}

#[test]
fn log_axis_labels_from_0_01_to_100_clear_the_axis_title() {
    let pts: Vec<(f64, f64)> = (0..=10)
        .map(|i| (2f64.powi(i), 10f64.powf(-2.0 + 0.4 * i as f64)))
        .collect();
    let c = chart(Scale::Log2, Scale::Log10, &pts, &[0.01, 0.011, 100.0]);
    let (boxes, _) = c.text_boxes();
    let title = boxes
        .iter()
        .find(|(t, _)| t == &c.y_label)
        .expect("the y title is drawn whole")
        .1;
    let ticks: Vec<&TextBox> = boxes
        .iter()
        .filter(|(t, _)| ["0.01", "0.1", "1", "10", "100"].contains(&t.as_str()))
        .map(|(_, b)| b)
        .collect();
    assert!(ticks.len() >= 5, "{boxes:?}");
    for t in ticks {
        assert!(!t.intersects(&title), "{t:?} overlaps the title {title:?}");
    }
    assert_labels_apart(&c);
}

#[test]
fn speedups_below_a_tenth_get_fraction_labels_and_a_wider_margin() {
    let pts = [(4.0, 0.004), (16.0, 0.03), (64.0, 0.4), (256.0, 3.0)];
    let c = chart(Scale::Log2, Scale::Log2, &pts, &[1.0]);
    let lay = c.layout();
    let labels: Vec<&str> = lay.texts.iter().map(|t| t.text.as_str()).collect();
    assert!(
        labels.contains(&"1/256") || labels.contains(&"1/128"),
        "{labels:?}"
    );
    assert!(!labels.iter().any(|l| l.starts_with("0.00")), "{labels:?}");
    assert_eq!(axis_tick_label(Scale::Log2, 0.03125), "1/32");
    assert_eq!(axis_tick_label(Scale::Log2, 0.25), "0.25");
    assert_eq!(axis_tick_label(Scale::Linear, 0.03125), tick_label(0.03125));
    assert_labels_apart(&c);
    // Labels as wide as seven characters still clear the title: the margin grows for them.
    let wide = chart(
        Scale::Log2,
        Scale::Linear,
        &[(1.0, 0.00012), (2.0, 0.00031)],
        &[],
    );
    assert!(wide.layout().frame.ml > ML, "{}", wide.layout().frame.ml);
    assert_labels_apart(&wide);
}

#[test]
fn crowded_ticks_are_thinned_until_their_labels_keep_apart() {
    // Powers of two from 2^-20 to 2^20: labels like `1/1048576` are wider than their spacing.
    let c = chart(
        Scale::Log2,
        Scale::Linear,
        &[(2f64.powi(-20), 0.2), (2f64.powi(20), 0.3)],
        &[],
    );
    let lay = c.layout();
    let tick_y = MT + lay.frame.ph + 13.0;
    let labelled = lay.texts.iter().filter(|t| t.y == tick_y).count();
    assert!(
        labelled >= 2 && labelled < lay.xticks.len(),
        "{labelled} of {:?}",
        lay.xticks
    );
    assert_labels_apart(&c);
    // `thin` keeps every k-th item for the smallest k that separates the extents.
    let items = [0.0, 10.0, 20.0, 30.0, 40.0];
    assert_eq!(thin(&items, 1.0, |&x| (x, x + 5.0)), items.to_vec());
    assert_eq!(thin(&items, 1.0, |&x| (x, x + 12.0)), vec![0.0, 20.0, 40.0]);
}

#[test]
fn long_texts_are_shortened_inside_the_svg_and_many_reference_labels_stay_apart() {
    let mut c = chart(
        Scale::Linear,
        Scale::Linear,
        &[(1.0, 1.0), (2.0, 2.0)],
        &[1.0, 1.01, 1.02, 1.03, 2.0],
    );
    c.title = "a very long task name that no chart of 440 pixels can hold: pass@10 vs steps".into();
    c.y_label = "a y-axis title far longer than the plot is high, which must be shortened".into();
    c.x_label = c.y_label.clone() + " and then some more words";
    c.hlines[0].text = "AR 123456.789 with a long label".into();
    let (boxes, _) = c.text_boxes();
    assert!(boxes.iter().any(|(t, _)| t.ends_with('…')), "{boxes:?}");
    assert_labels_apart(&c);
}

#[test]
fn values_at_the_top_of_the_range_keep_off_the_frame() {
    for scale in [Scale::Linear, Scale::Log2] {
        let c = chart(Scale::Linear, scale, &[(1.0, 0.5), (2.0, 1.0)], &[]);
        let f = c.layout().frame;
        let (top, bottom) = (f.py(1.0), f.py(0.5));
        assert!(top > MT + 2.0, "{scale:?}: 1.0 at {top}, frame top {MT}");
        assert!(bottom < MT + f.ph - 2.0, "{scale:?}: 0.5 at {bottom}");
    }
}

#[test]
fn colour_key_names_every_series_below_the_axis_title() {
    let mut c = chart(
        Scale::Log2,
        Scale::Linear,
        &[(1.0, 1.2), (4.0, 1.1)],
        &[1.0],
    );
    let base = c.series[0].clone();
    c.series = (0..5)
        .map(|i| Series {
            name: format!("L = {}", 64 << i),
            color: PALETTE[i].into(),
            ..base.clone()
        })
        .collect();
    c.key = true;
    let lay = c.layout();
    assert_eq!(lay.key.len(), 5);
    assert!(lay.height > H, "{}", lay.height);
    let svg = c.render();
    for i in 0..5 {
        assert!(svg.contains(&format!(">L = {}</text>", 64 << i)), "{svg}");
    }
    assert_labels_apart(&c);
}

#[test]
fn text_boxes_intersect_only_when_they_share_area() {
    let a = TextBox {
        x0: 0.0,
        y0: 0.0,
        x1: 10.0,
        y1: 10.0,
    };
    let b = TextBox { x0: 9.0, ..a };
    let c = TextBox {
        x0: 10.0,
        x1: 20.0,
        ..a
    };
    assert!(a.intersects(&b) && b.intersects(&a));
    assert!(!a.intersects(&c));
    assert!(a.inside(10.0, 10.0) && !a.inside(9.0, 10.0));
}
