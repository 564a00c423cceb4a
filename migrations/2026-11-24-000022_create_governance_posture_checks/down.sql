DROP TABLE governance_posture_checks;
