//! Rates of spread against published BehavePlus outputs.
//!
//! Two sources:
//! - **BehavePlus core** (`firelab/behave`, the C++ library behind BehavePlus 6 and 7), run
//!   through the `pyrothermel` 0.1.4 Python bindings: standard models 1–13 with midflame wind
//!   (`WindHeightInputMode::DirectMidflame`), wind blowing upslope (wind direction = aspect = 0,
//!   `RelativeToNorth`), slope in percent, moistures 6/7/8/60/90 %. Printed to 6 decimals in
//!   ft/min and BTU/ft²/min; we agree to a relative 1e-6. The behave library applies the wind
//!   limit by default, so its 20 mi/h column is compared with `wind_limit = true`. The
//!   length-to-width ratios were derived from its backing rate (`getSpreadRateInDirectionOfInterest`
//!   opposite the head): `e = (R - R_b)/(R + R_b)`, `L/W = 1/√(1 - e²)`.
//! - **BehavePlus 5** tables as printed in `pyregence/gridfire` (`test/gridfire/behaveplus_results.clj`,
//!   "mid" moisture 4/4/6/75/70 %, 10 mi/h midflame wind upslope, 20 % slope) for Scott & Burgan
//!   (2005) static models — the same equations with other fuel parameters. Printed values are
//!   rounded (ROS 0.1 ch/h, I_R 1 BTU/ft²/min, live M_x 1 %, φ 0.1), so the tolerance is half a
//!   unit of the last printed digit.

use super::*;
use crate::fuels;

fn close(what: &str, got: f64, want: f64, tolerance: f64) {
    assert!(
        (got - want).abs() <= tolerance,
        "{what}: got {got}, want {want} ± {tolerance}"
    );
}

fn rel(what: &str, got: f64, want: f64) {
    close(what, got, want, 1e-6 * want.abs().max(1.0));
}

const MPH: f64 = FT_MIN_PER_MPH;

/// (model, R_0 ft/min, I_R BTU/ft²/min, ROS 5 mi/h upslope on 30 %, ROS 20 mi/h flat with limit).
const BEHAVE_STANDARD: [(u8, f64, f64, f64, f64); 13] = [
    (1, 4.605304, 826.1327, 120.334076, 297.099053),
    (2, 2.858579, 3535.4014, 51.152582, 533.024224),
    (3, 4.957447, 2900.0707, 145.440088, 771.794893),
    (4, 4.896541, 11999.5370, 102.044330, 611.975890),
    (5, 1.345816, 2855.7195, 32.894590, 192.865590),
    (6, 1.901318, 1914.9405, 42.174516, 222.212797),
    (7, 1.550183, 2140.3657, 37.289365, 201.730210),
    (8, 0.260860, 927.1255, 2.566471, 5.354033),
    (9, 0.920251, 2393.0031, 10.945980, 95.526511),
    (10, 0.931069, 5936.2924, 11.507343, 66.943800),
    (11, 0.620839, 2339.0876, 7.742505, 30.820868),
    (12, 1.507956, 6572.5940, 16.897849, 64.619037),
    (13, 2.025746, 9792.1490, 20.480002, 78.005733),
];

#[test]
fn standard_models_match_the_behaveplus_core() {
    let moisture = Moisture::default();
    for (n, r0, ir, ros_5_30, ros_20_limited) in BEHAVE_STANDARD {
        let bed = FuelBed::new(fuels::standard(n).unwrap(), &moisture);
        let name = |what: &str| format!("fuel model {n}: {what}");
        rel(
            &name("R_0"),
            bed.head_upslope(0.0, 0.0, false).ros_ft_min,
            r0,
        );
        rel(&name("reaction intensity"), bed.reaction_intensity, ir);
        rel(
            &name("ROS 5 mi/h, 30 %"),
            bed.head_upslope(5.0 * MPH, 0.30, false).ros_ft_min,
            ros_5_30,
        );
        rel(
            &name("ROS 20 mi/h, wind limit"),
            bed.head_upslope(20.0 * MPH, 0.0, true).ros_ft_min,
            ros_20_limited,
        );
    }
}

#[test]
fn length_to_width_and_backing_match_the_behaveplus_core() {
    // (model, wind mi/h, slope tangent, head ROS, backing ROS, L/W), wind limit on.
    let cases = [
        (1, 5.0, 0.30, 120.334076, 13.522724, 1.659144),
        (4, 5.0, 0.30, 102.044330, 11.158619, 1.677367),
        (10, 5.0, 0.30, 11.507343, 1.238457, 1.688142),
        (2, 20.0, 0.0, 533.024224, 2.098553, 8.0),
        (8, 20.0, 0.0, 5.354033, 0.210745, 2.619383),
        (3, 10.0, 0.60, 377.572470, 8.953785, 3.323881),
    ];
    let moisture = Moisture::default();
    for (n, wind, slope, head, back, lw) in cases {
        let bed = FuelBed::new(fuels::standard(n).unwrap(), &moisture);
        let s = bed.head_upslope(wind * MPH, slope, true);
        rel(&format!("model {n} head"), s.ros_ft_min, head);
        rel(&format!("model {n} backing"), s.backing_ft_min(), back);
        rel(&format!("model {n} L/W"), s.length_to_width, lw);
    }
}

#[test]
fn fuel_model_8_is_wind_limited_at_20_mph() {
    // I_R = 927 BTU/ft²/min caps the effective wind at 834 ft/min = 9.48 mi/h.
    let bed = FuelBed::new(fuels::standard(8).unwrap(), &Moisture::default());
    let free = bed.head_upslope(20.0 * MPH, 0.0, false);
    let capped = bed.head_upslope(20.0 * MPH, 0.0, true);
    assert!(!free.wind_limited && capped.wind_limited);
    rel("unlimited ROS", free.ros_ft_min, 15.683652);
    rel(
        "capped wind",
        capped.effective_wind_ft_min,
        0.9 * bed.reaction_intensity,
    );
}

/// A Scott & Burgan (2005) static model in t/ac, converted like BehavePlus (× 2000/43560).
fn scott_burgan(
    depth: f64,
    mx: f64,
    dead_t_ac: [f64; 3],
    woody_t_ac: f64,
    sav: [f64; 2],
) -> FuelModel {
    let f = 2000.0 / 43560.0;
    FuelModel {
        number: 0,
        name: "Scott & Burgan",
        depth_ft: depth,
        dead_extinction: mx,
        dead_load: dead_t_ac.map(|t| t * f),
        herb_load: 0.0,
        woody_load: woody_t_ac * f,
        sav_1h: sav[0],
        sav_live: sav[1],
    }
}

#[test]
fn scott_burgan_models_match_behaveplus5_tables() {
    // (name, model, no-wind ROS ch/h, ROS ch/h at 10 mi/h + 20 %, I_R, live M_x %, φ_w, φ_s)
    let cases = [
        (
            "SB2",
            scott_burgan(1.0, 0.25, [4.5, 4.25, 4.0], 0.0, [2000.0, 0.0]),
            1.7,
            50.1,
            5547.0,
            None,
            26.9,
            0.7,
        ),
        (
            "TL8",
            scott_burgan(0.3, 0.35, [5.8, 1.4, 1.1], 0.0, [1800.0, 0.0]),
            0.9,
            18.7,
            3617.0,
            None,
            19.2,
            0.6,
        ),
        (
            "TU5",
            scott_burgan(1.0, 0.25, [4.0, 4.0, 3.0], 3.0, [1500.0, 750.0]),
            1.2,
            26.0,
            9075.0,
            Some(737.0),
            20.3,
            0.7,
        ),
        (
            "SH5",
            scott_burgan(6.0, 0.15, [3.6, 2.1, 0.0], 2.9, [750.0, 1600.0]),
            2.9,
            174.2,
            5720.0,
            Some(337.0),
            57.9,
            1.4,
        ),
        (
            "SH2",
            scott_burgan(1.0, 0.15, [1.35, 2.4, 0.75], 3.85, [2000.0, 1600.0]),
            0.8,
            24.6,
            6083.0,
            Some(124.0),
            29.3,
            0.8,
        ),
    ];
    let moisture = Moisture::from_percent([4.0, 4.0, 6.0, 75.0, 70.0]);
    const CH_H: f64 = 1.1; // ft/min in 1 chain/h
    for (name, model, still, windy, ir, live_mx, phi_w, phi_s) in cases {
        let bed = FuelBed::new(&model, &moisture);
        let s = bed.head_upslope(10.0 * MPH, 0.20, true);
        close(&format!("{name} ROS"), bed.r0 / CH_H, still, 0.05 + 1e-9);
        close(
            &format!("{name} ROS wind+slope"),
            s.ros_ft_min / CH_H,
            windy,
            0.05 + 1e-9,
        );
        close(&format!("{name} I_R"), bed.reaction_intensity, ir, 0.5);
        if let Some(mx) = live_mx {
            close(
                &format!("{name} live M_x"),
                bed.live_extinction * 100.0,
                mx,
                0.5,
            );
        }
        close(&format!("{name} φ_w"), s.phi_w, phi_w, 0.05 + 1e-9);
        close(&format!("{name} φ_s"), s.phi_s, phi_s, 0.05 + 1e-9);
    }
}

#[test]
fn length_to_width_formula() {
    close("no wind", length_to_width(0.0), 1.0, 1e-12);
    // 0.936 e^0.5735 + 0.461 e^-0.346 - 0.397
    close("5 mi/h", length_to_width(5.0), 1.590064, 1e-6);
    close("capped", length_to_width(40.0), MAX_LENGTH_TO_WIDTH, 0.0);
}

#[test]
fn wet_fuel_does_not_spread() {
    // Model 1 goes out at 12 % dead moisture.
    let bed = FuelBed::new(
        fuels::standard(1).unwrap(),
        &Moisture::from_percent([12.0, 12.0, 12.0, 100.0, 100.0]),
    );
    assert_eq!(bed.reaction_intensity, 0.0);
    assert_eq!(bed.head_upslope(10.0 * MPH, 0.5, false).ros_ft_min, 0.0);
}

#[test]
fn cross_slope_wind_heads_between_wind_and_upslope() {
    let bed = FuelBed::new(fuels::standard(2).unwrap(), &Moisture::default());
    // Wind toward +x, slope rising toward +y.
    let s = bed.spread([5.0 * MPH, 0.0], [0.0, 0.3], false);
    let phi_e = (s.phi_w * s.phi_w + s.phi_s * s.phi_s).sqrt();
    rel("vector sum", s.ros_ft_min, bed.r0 * (1.0 + phi_e));
    rel("heading", s.heading[1] / s.heading[0], s.phi_s / s.phi_w);
    // Aligned vectors reduce to the upslope case.
    let aligned = bed.spread([0.0, 5.0 * MPH], [0.0, 0.3], false);
    rel(
        "aligned",
        aligned.ros_ft_min,
        bed.head_upslope(5.0 * MPH, 0.3, false).ros_ft_min,
    );
}

#[test]
fn heat_per_unit_area_is_reaction_intensity_times_residence_time() {
    let bed = FuelBed::new(fuels::standard(10).unwrap(), &Moisture::default());
    rel("t_r", bed.residence_time, 384.0 / bed.sigma);
    rel(
        "HPA",
        bed.heat_per_unit_area(),
        bed.reaction_intensity * bed.residence_time,
    );
}
